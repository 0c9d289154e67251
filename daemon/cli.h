// The command line of trainwatch: one CLI11 App with every subcommand and option, built in
// one place so that --help and the manual page (`trainwatch manual`, rendered to
// trainwatch(1) at build time) come from the same definition and cannot drift. main() owns
// it; parsing writes into the option structs below.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "app/daemon.h"
#include "cli/bundle_commands.h"
#include "cli/commands.h"
#include "cli/control_commands.h"
#include "cli/incident_commands.h"
#include "cli/job_command.h"
#include "cli/node_verdict_command.h"
#include "cli/report_command.h"
#include "cli/slurm_epilog_command.h"

namespace trainwatch::cli {

struct CommandLine {
  CLI::App app{"trainwatch: catch crashes and hangs of ML training jobs, with the evidence",
               "trainwatch"};

  CheckOptions check;
  std::string check_config;
  app::DaemonOptions daemon;
  app::DaemonOptions wrap;
  std::string log_format = "human";  // daemon and wrap: human | json
  ControlOptions control;
  BundlesOptions bundles;
  IncidentsOptions incidents;
  ReportOptions report;
  JobOptions job;
  NodeVerdictOptions node_verdict;
  SlurmEpilogOptions slurm_epilog;
  ScanOptions scan;
  std::string scan_format = "text";

  // Owned by `app`; the one that was given is true after parsing.
  CLI::App* check_cmd = nullptr;
  CLI::App* daemon_cmd = nullptr;
  CLI::App* wrap_cmd = nullptr;
  CLI::App* status_cmd = nullptr;
  CLI::App* reload_cmd = nullptr;
  CLI::App* snapshot_cmd = nullptr;
  CLI::App* bundles_list_cmd = nullptr;
  CLI::App* bundles_show_cmd = nullptr;
  CLI::App* incidents_list_cmd = nullptr;
  CLI::App* incidents_show_cmd = nullptr;
  CLI::App* incidents_ack_cmd = nullptr;
  CLI::App* report_cmd = nullptr;
  CLI::App* job_cmd = nullptr;
  CLI::App* node_verdict_cmd = nullptr;
  CLI::App* slurm_epilog_cmd = nullptr;
  CLI::App* scan_cmd = nullptr;
  CLI::App* manual_cmd = nullptr;             // hidden: prints trainwatch(1) as Markdown
  CLI::App* compile_prefilter_cmd = nullptr;  // hidden: the daemon's compile helper
};

// Heap-allocated because the options are bound to the addresses of its members and a
// CLI::App cannot move.
std::unique_ptr<CommandLine> BuildCommandLine();

// CLI11 answers a mistyped command ("trainwatch stauts") with "A subcommand is required":
// the message naming the word and the commands instead, or "" when argv[1] is no such slip.
std::string UnknownCommandError(const CLI::App& app, int argc, const char* const* argv);

}  // namespace trainwatch::cli
