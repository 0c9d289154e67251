// trainwatch: watches ML training jobs for crashes and hangs. This file only parses the
// command line (defined in cli.cpp) and hands off to src/cli/ (the subcommands) or src/app/ (the
// daemon).
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <thread>

#include "cli.h"
#include "cli/config_check.h"
#include "core/logging.h"
#include "core/prefilter_compiler.h"
#include "manual.h"

int main(int argc, char** argv) {
  using trainwatch::cli::EventFormat;
  const auto cli = trainwatch::cli::BuildCommandLine();
  if (const std::string unknown = trainwatch::cli::UnknownCommandError(cli->app, argc, argv);
      !unknown.empty()) {
    std::cerr << unknown << "\n";
    return trainwatch::cli::kExitError;
  }
  try {
    cli->app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = cli->app.exit(e);
    return code == 0 ? 0 : trainwatch::cli::kExitError;
  }
  if (*cli->manual_cmd) {
    trainwatch::cli::WriteManual(cli->app, std::cout);
    return std::cout.flush() ? 0 : trainwatch::cli::kExitError;
  }
  if (*cli->check_cmd) {
    if (!cli->check_config.empty()) {
      return trainwatch::cli::RunCheckConfig(cli->check_config);
    }
    return trainwatch::cli::RunCheck(cli->check, std::cout, std::cerr);
  }
  if (*cli->compile_prefilter_cmd) {
    return trainwatch::RunPrefilterCompilerHelper(STDIN_FILENO, STDOUT_FILENO);
  }
  if (*cli->daemon_cmd || *cli->wrap_cmd) {
    // The daemon stays up for months: Hyperscan's compiler runs in a short-lived helper (this
    // binary, as it is running even if the package replaced the file), never in its memory.
    trainwatch::CompilePrefiltersWith({"/proc/self/exe", "compile-prefilter"});
    trainwatch::SetUpLogging(cli->log_format == "json" ? trainwatch::LogFormat::kJson
                                                       : trainwatch::LogFormat::kHuman);
    return trainwatch::app::RunDaemon(*cli->daemon_cmd ? cli->daemon : cli->wrap);
  }
  if (*cli->status_cmd) {
    return trainwatch::cli::RunStatus(cli->control, std::cout, std::cerr);
  }
  if (*cli->reload_cmd) {
    return trainwatch::cli::RunReload(cli->control, std::cout, std::cerr);
  }
  if (*cli->snapshot_cmd) {
    return trainwatch::cli::RunSnapshot(cli->control, std::cout, std::cerr);
  }
  if (*cli->bundles_list_cmd) {
    return trainwatch::cli::RunBundlesList(cli->bundles, std::cout, std::cerr);
  }
  if (*cli->bundles_show_cmd) {
    return trainwatch::cli::RunBundlesShow(cli->bundles, std::cout, std::cerr);
  }
  if (*cli->incidents_list_cmd) {
    return trainwatch::cli::RunIncidentsList(cli->incidents, std::cout, std::cerr);
  }
  if (*cli->incidents_show_cmd) {
    return trainwatch::cli::RunIncidentsShow(cli->incidents, std::cout, std::cerr);
  }
  if (*cli->node_verdict_cmd) {
    cli->node_verdict.now = std::chrono::system_clock::now();  // read at the edge
    return trainwatch::cli::RunNodeVerdict(cli->node_verdict, std::cout, std::cerr);
  }
  if (*cli->slurm_epilog_cmd) {
    cli->slurm_epilog.steady_now = [] { return std::chrono::steady_clock::now(); };
    cli->slurm_epilog.pause = [](std::chrono::milliseconds pause) {
      std::this_thread::sleep_for(pause);
    };
    return trainwatch::cli::RunSlurmEpilog(cli->slurm_epilog, std::cout, std::cerr);
  }
  if (*cli->job_cmd) {
    return trainwatch::cli::RunJob(cli->job, std::cout, std::cerr);
  }
  if (*cli->report_cmd) {
    return trainwatch::cli::RunReport(cli->report, std::cout, std::cerr);
  }
  if (*cli->incidents_ack_cmd) {
    cli->incidents.now = std::chrono::system_clock::now();  // the record's time, read at the edge
    return trainwatch::cli::RunIncidentsAck(cli->incidents, std::cout, std::cerr);
  }
  cli->scan.format = cli->scan_format == "jsonl" ? EventFormat::kJsonLines : EventFormat::kText;
  cli->scan.now = std::chrono::system_clock::now();  // read at the edge, as for the ack
  return trainwatch::cli::RunScan(cli->scan, std::cout, std::cerr);
}
