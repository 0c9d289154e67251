// trainwatch: watches ML training jobs for crashes and hangs. This file only parses the
// command line and hands off to app/.
#include <CLI/CLI.hpp>
#include <iostream>

#include "app/commands.h"

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
    return trainwatch::app::RunCheck(check, std::cout, std::cerr);
  }
  scan.format = format == "jsonl" ? EventFormat::kJsonLines : EventFormat::kText;
  return trainwatch::app::RunScan(scan, std::cout, std::cerr);
}
