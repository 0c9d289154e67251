// trainwatch: watches ML training jobs for crashes and hangs. This file only parses the
// command line and hands off to app/.
#include <CLI/CLI.hpp>
#include <iostream>

#include "app/bundle_commands.h"
#include "app/commands.h"
#include "app/control_commands.h"
#include "app/daemon.h"
#include "core/logging.h"

int main(int argc, char** argv) {
  using trainwatch::app::EventFormat;
  CLI::App cli{"trainwatch: catch crashes and hangs of ML training jobs, with the evidence"};
  cli.set_version_flag("--version", std::string(TRAINWATCH_VERSION));
  cli.require_subcommand(1);

  trainwatch::app::CheckOptions check;
  auto* check_cmd = cli.add_subcommand(
      "check", "Load rule files, run each rule's examples; report every problem as file:line:col");
  check_cmd->add_option("--rules", check.rule_paths,
                        "Rule file or directory (repeatable; default: the shipped packs)");
  std::string check_config;
  check_cmd->add_option("--config", check_config,
                        "Validate this daemon config and the rules it names instead");

  trainwatch::app::DaemonOptions daemon;
  auto* daemon_cmd = cli.add_subcommand(
      "daemon", "Watch the configured sources in the foreground; record incidents");
  daemon_cmd->add_option("--config", daemon.config_path,
                         "Config file (default: $TRAINWATCH_CONFIG, "
                         "/etc/trainwatch/trainwatch.yaml, else the shipped default)");
  daemon_cmd->add_option("--kmsg-device", daemon.kmsg_device, "Kernel log device")
      ->capture_default_str();

  trainwatch::app::DaemonOptions wrap;
  auto* wrap_cmd = cli.add_subcommand(
      "wrap",
      "Run a training command, pass its output through, watch it (and the configured "
      "sources) until it ends; exit with its status");
  wrap_cmd->add_option("--config", wrap.config_path, "Config file (default as for daemon)");
  wrap_cmd->add_option("command", wrap.wrap, "The command and its arguments, after --")->required();
  wrap_cmd->prefix_command(false);

  trainwatch::app::ControlOptions control;
  auto* status_cmd =
      cli.add_subcommand("status", "Ask the running daemon what it watches and what it saw");
  status_cmd->add_option("--config", control.config_path, "The daemon's config file");
  status_cmd->add_flag("--json", control.json, "Print the daemon's answer as JSON");
  auto* snapshot_cmd =
      cli.add_subcommand("snapshot", "Ask the running daemon to record an incident now");
  snapshot_cmd->add_option("--config", control.config_path, "The daemon's config file");
  snapshot_cmd->add_option("--reason", control.reason, "Why (recorded with the incident)")
      ->capture_default_str();
  snapshot_cmd->add_option("--container", control.container,
                           "Add this container's docker state (run on the host)");
  snapshot_cmd->add_option("--copy", control.copy, "A file or directory to add (repeatable)");
  snapshot_cmd->add_option("--log", control.logs, "A log whose tail to add (repeatable)");
  snapshot_cmd->add_option("--out", control.out_dir,
                           "Write the bundle here, capturing on our own (no daemon asked)");

  trainwatch::app::BundlesOptions bundles;
  auto* bundles_cmd = cli.add_subcommand("bundles", "List or show the bundles");
  bundles_cmd->require_subcommand(1);
  auto* list_cmd = bundles_cmd->add_subcommand("list", "The bundles, oldest first");
  auto* show_cmd = bundles_cmd->add_subcommand("show", "A bundle's manifest, readable");
  for (auto* command : {list_cmd, show_cmd}) {
    command->add_option("--config", bundles.config_path, "The config naming the bundles dir");
    command->add_option("--dir", bundles.dir, "The bundles directory (instead of the config's)");
    command->add_flag("--json", bundles.json, "Print JSON");
  }
  show_cmd->add_option("bundle", bundles.id, "Incident id, bundle file name or path")->required();

  trainwatch::app::ScanOptions scan;
  std::string format = "text";
  auto* scan_cmd = cli.add_subcommand(
      "scan", "Run the rules over log files; exit 1 if a crash, hang or device rule fired");
  scan_cmd->add_option("--rules", scan.rule_paths,
                       "Rule file or directory (repeatable; default: the shipped packs)");
  scan_cmd
      ->add_option("--tag", scan.tags,
                   "Tag of the source the files stand for: train, habana, kmsg, ... "
                   "(repeatable: a source may carry several)")
      ->capture_default_str();
  scan_cmd->add_option("--format", format, "Output format")
      ->check(CLI::IsMember({"text", "jsonl"}))
      ->capture_default_str();
  scan_cmd->add_option("files", scan.files, "Log files to scan (- for standard input)")->required();

  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = cli.exit(e);
    return code == 0 ? 0 : trainwatch::app::kExitError;
  }
  if (*check_cmd) {
    if (!check_config.empty()) {
      return trainwatch::app::CheckConfig(check_config);
    }
    return trainwatch::app::RunCheck(check, std::cout, std::cerr);
  }
  if (*daemon_cmd || *wrap_cmd) {
    trainwatch::SetUpLogging();
    return trainwatch::app::RunDaemon(*daemon_cmd ? daemon : wrap);
  }
  if (*status_cmd) {
    return trainwatch::app::RunStatus(control, std::cout, std::cerr);
  }
  if (*snapshot_cmd) {
    return trainwatch::app::RunSnapshot(control, std::cout, std::cerr);
  }
  if (*list_cmd) {
    return trainwatch::app::RunBundlesList(bundles, std::cout, std::cerr);
  }
  if (*show_cmd) {
    return trainwatch::app::RunBundlesShow(bundles, std::cout, std::cerr);
  }
  scan.format = format == "jsonl" ? EventFormat::kJsonLines : EventFormat::kText;
  return trainwatch::app::RunScan(scan, std::cout, std::cerr);
}
