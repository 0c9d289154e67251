// trainwatch: watches ML training jobs for crashes and hangs. This file only parses the
// command line (defined in cli.cpp) and hands off to app/.
#include <iostream>

#include "cli.h"
#include "core/logging.h"
#include "manual.h"

int main(int argc, char** argv) {
  using trainwatch::app::EventFormat;
  const auto cli = trainwatch::cli::BuildCommandLine();
  try {
    cli->app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = cli->app.exit(e);
    return code == 0 ? 0 : trainwatch::app::kExitError;
  }
  if (*cli->manual_cmd) {
    trainwatch::cli::WriteManual(cli->app, std::cout);
    return std::cout.flush() ? 0 : trainwatch::app::kExitError;
  }
  if (*cli->check_cmd) {
    if (!cli->check_config.empty()) {
      return trainwatch::app::CheckConfig(cli->check_config);
    }
    return trainwatch::app::RunCheck(cli->check, std::cout, std::cerr);
  }
  if (*cli->daemon_cmd || *cli->wrap_cmd) {
    trainwatch::SetUpLogging(cli->log_format == "json" ? trainwatch::LogFormat::kJson
                                                       : trainwatch::LogFormat::kHuman);
    return trainwatch::app::RunDaemon(*cli->daemon_cmd ? cli->daemon : cli->wrap);
  }
  if (*cli->status_cmd) {
    return trainwatch::app::RunStatus(cli->control, std::cout, std::cerr);
  }
  if (*cli->snapshot_cmd) {
    return trainwatch::app::RunSnapshot(cli->control, std::cout, std::cerr);
  }
  if (*cli->bundles_list_cmd) {
    return trainwatch::app::RunBundlesList(cli->bundles, std::cout, std::cerr);
  }
  if (*cli->bundles_show_cmd) {
    return trainwatch::app::RunBundlesShow(cli->bundles, std::cout, std::cerr);
  }
  cli->scan.format = cli->scan_format == "jsonl" ? EventFormat::kJsonLines : EventFormat::kText;
  return trainwatch::app::RunScan(cli->scan, std::cout, std::cerr);
}
