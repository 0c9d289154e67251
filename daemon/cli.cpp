#include "cli.h"

namespace trainwatch::cli {

namespace {

// The same option on daemon and wrap: both run the daemon, whose logs a journal reads as
// text and a container platform (Loki, Elasticsearch) ingests best as JSON lines.
void AddLogFormat(CLI::App& command, std::string& log_format) {
  command.add_option("--log-format", log_format, "Daemon log lines on stderr")
      ->check(CLI::IsMember({"human", "json"}))
      ->envname("TRAINWATCH_LOG_FORMAT")
      ->capture_default_str();
}

// What `--config` falls back to, for every command that reads one (config::ConfigPath).
constexpr const char* kConfigDefault =
    " (default: $TRAINWATCH_CONFIG, /etc/trainwatch/trainwatch.yaml, else the shipped default)";

std::string WithConfigDefault(const std::string& what) { return what + kConfigDefault; }

}  // namespace

std::string UnknownCommandError(const CLI::App& app, int argc, const char* const* argv) {
  if (argc < 2 || argv[1][0] == '-') {
    return "";
  }
  const std::string word = argv[1];
  std::string names;
  for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (command->check_name(word)) {
      return "";
    }
    if (!command->get_group().empty()) {  // the hidden `manual` is not offered
      names += names.empty() ? "" : ", ";
      names += command->get_name();
    }
  }
  return "trainwatch: unknown command '" + word + "' (the commands: " + names +
         "; trainwatch --help says what each does)";
}

std::unique_ptr<CommandLine> BuildCommandLine() {
  auto cli = std::make_unique<CommandLine>();
  CLI::App& app = cli->app;
  app.set_version_flag("--version", std::string(TRAINWATCH_VERSION));
  app.require_subcommand(1);

  cli->check_cmd = app.add_subcommand(
      "check", "Load rule files, run each rule's examples; report every problem as file:line:col");
  cli->check_cmd
      ->add_option("--rules", cli->check.rule_paths,
                   "Rule file or directory (repeatable; default: the shipped packs)")
      ->allow_extra_args(false);
  cli->check_cmd->add_option("--config", cli->check_config,
                             "Validate this daemon config and the rules it names instead "
                             "(no default: without it, the rules are checked)");

  cli->daemon_cmd = app.add_subcommand(
      "daemon", "Watch the configured sources in the foreground; record incidents");
  cli->daemon_cmd->add_option("--config", cli->daemon.config_path,
                              WithConfigDefault("Config file"));
  cli->daemon_cmd->add_option("--kmsg-device", cli->daemon.kmsg_device, "Kernel log device")
      ->capture_default_str();
  AddLogFormat(*cli->daemon_cmd, cli->log_format);

  cli->wrap_cmd = app.add_subcommand(
      "wrap",
      "Run a training command, pass its output through, watch it (and the configured "
      "sources) until it ends; exit with its status");
  cli->wrap_cmd->add_option("--config", cli->wrap.config_path,
                            "Config file (default as for daemon)");
  AddLogFormat(*cli->wrap_cmd, cli->log_format);
  cli->wrap_cmd
      ->add_option("--exit-codes", cli->wrap.exit_codes,
                   "own: exit with the command's status; verdict: a failed command exits 90 "
                   "(its own failure: do not retry), 91 (retry) or 92 (the node is at fault), "
                   "by its incident's verdict")
      ->check(CLI::IsMember({"own", "verdict"}))
      ->capture_default_str();
  cli->wrap_cmd->add_option("command", cli->wrap.wrap, "The command and its arguments, after --")
      ->required();
  cli->wrap_cmd->prefix_command(false);

  cli->status_cmd =
      app.add_subcommand("status", "Ask the running daemon what it watches and what it saw");
  cli->status_cmd->add_option("--config", cli->control.config_path,
                              WithConfigDefault("The daemon's config file, naming its socket"));
  cli->status_cmd->add_flag("--json", cli->control.json, "Print the daemon's answer as JSON");

  cli->reload_cmd = app.add_subcommand(
      "reload",
      "Make the running daemon reload its config and rules, and wait for its verdict: exit 1 "
      "if it refused them (it keeps the old ones), as systemctl reload does");
  cli->reload_cmd->add_option("--config", cli->control.config_path,
                              WithConfigDefault("The daemon's config file, naming its socket"));

  cli->snapshot_cmd =
      app.add_subcommand("snapshot",
                         "Record an incident and its bundle now: by the running daemon, or "
                         "here when none answers (or with --out)");
  CLI::App& snapshot = *cli->snapshot_cmd;
  snapshot.add_option("--config", cli->control.config_path,
                      WithConfigDefault("The daemon's config file, naming its socket"));
  snapshot.add_option("--reason", cli->control.reason, "Why (recorded with the incident)")
      ->capture_default_str();
  snapshot.add_option("--container", cli->control.container,
                      "Add this container's docker state (run on the host)");
  snapshot.add_option("--copy", cli->control.copy, "A file or directory to add (repeatable)")
      ->allow_extra_args(false);
  snapshot.add_flag("--stacks", cli->control.stacks,
                    "Also take the ranks' stacks with eu-stack and gdb, which stop each rank "
                    "while they read (off: a healthy job is not held)");
  snapshot.add_option("--log", cli->control.logs, "A log whose tail to add (repeatable)")
      ->allow_extra_args(false);
  snapshot.add_option("--out", cli->control.out_dir,
                      "Write the bundle here, capturing on our own (no daemon asked)");

  auto* bundles_cmd = app.add_subcommand("bundles", "List or show the bundles");
  bundles_cmd->require_subcommand(1);
  cli->bundles_list_cmd = bundles_cmd->add_subcommand("list", "The bundles, oldest first");
  cli->bundles_show_cmd = bundles_cmd->add_subcommand("show", "A bundle's manifest, readable");
  for (auto* command : {cli->bundles_list_cmd, cli->bundles_show_cmd}) {
    command->add_option("--config", cli->bundles.config_path,
                        WithConfigDefault("The config naming the bundles dir"));
    command->add_option("--dir", cli->bundles.dir,
                        "The bundles directory (instead of the config's)");
    command->add_flag("--json", cli->bundles.json, "Print JSON");
  }
  cli->bundles_show_cmd
      ->add_option("bundle", cli->bundles.id, "Incident id, bundle file name or path")
      ->required();

  auto* incidents_cmd = app.add_subcommand(
      "incidents", "List, show or acknowledge the incidents recorded (no daemon needed)");
  incidents_cmd->require_subcommand(1);
  cli->incidents_list_cmd = incidents_cmd->add_subcommand(
      "list", "The incidents, oldest first: kind, verdict, recurrence, bundle");
  cli->incidents_show_cmd = incidents_cmd->add_subcommand(
      "show", "One incident: verdict, fingerprint, firing lines, suspects, bundle");
  cli->incidents_ack_cmd = incidents_cmd->add_subcommand(
      "ack",
      "Resolve an open incident by hand (through the running daemon, or in the log when none "
      "runs)");
  for (auto* command : {cli->incidents_list_cmd, cli->incidents_show_cmd, cli->incidents_ack_cmd}) {
    command->add_option("--config", cli->incidents.config_path,
                        WithConfigDefault("The config naming the state_dir"));
    command->add_option("--file", cli->incidents.file,
                        "The incidents.jsonl to use (instead of the config's; ack then writes "
                        "there without asking a daemon)");
    command->add_flag("--json", cli->incidents.json, "Print JSON");
  }
  for (auto* command : {cli->incidents_show_cmd, cli->incidents_ack_cmd}) {
    command->add_option("id", cli->incidents.id, "Incident id, or a unique start of one")
        ->required();
  }
  cli->incidents_ack_cmd->add_option("--why", cli->incidents.why,
                                     "A note for the record: what was done about it");

  cli->report_cmd = app.add_subcommand(
      "report", "Write a bundle's report.html (verdict, timeline, ranks, devices) to open");
  cli->report_cmd
      ->add_option("bundle", cli->report.bundle.id,
                   "Bundle path or file name, or the id of its incident")
      ->required();
  cli->report_cmd->add_option("--config", cli->report.bundle.config_path,
                              WithConfigDefault("The config naming the bundles dir"));
  cli->report_cmd->add_option("--dir", cli->report.bundle.dir,
                              "The bundles directory (instead of the config's)");
  cli->report_cmd->add_option(
      "--out", cli->report.out,
      "Where to write it (- for standard output; default ./<bundle>.report.html)");

  cli->job_cmd = app.add_subcommand(
      "job", "A job's incidents on every node, from the shared directory (no daemon needed)");
  cli->job_cmd->add_option("id", cli->job.id, "The job id (none: list the jobs)");
  cli->job_cmd->add_option("--config", cli->job.config_path,
                           WithConfigDefault("The config naming cluster.shared_dir"));
  cli->job_cmd->add_option("--shared-dir", cli->job.shared_dir,
                           "The shared directory (instead of the config's)");
  cli->job_cmd->add_flag("--json", cli->job.json, "Print JSON");

  cli->node_verdict_cmd = app.add_subcommand(
      "node-verdict",
      "Is this node fit for a job? PASS/WARNING/CRITICAL/UNKNOWN, exit 0/1/2/3 (a Slurm Prolog "
      "or HealthCheckProgram, a Kubernetes init container)");
  cli->node_verdict_cmd->add_option("--config", cli->node_verdict.config_path,
                                    WithConfigDefault("The config naming the state_dir"));
  cli->node_verdict_cmd->add_flag("--json", cli->node_verdict.json,
                                  "Print JSON (docs/node-verdict.md)");
  cli->node_verdict_cmd
      ->add_option("--timeout", cli->node_verdict.timeout,
                   "Each device tool's deadline (hl-smi, nvidia-smi, npu-smi)")
      ->capture_default_str();
  cli->node_verdict_cmd->add_flag("--no-devices", cli->node_verdict.skip_devices,
                                  "Run no device tool");

  cli->slurm_epilog_cmd = app.add_subcommand(
      "slurm-epilog",
      "For slurm.conf's Epilog: wait for the job's incident here; exit 1 only if it blames the "
      "node (Slurm drains it)");
  cli->slurm_epilog_cmd->add_option("--config", cli->slurm_epilog.config_path,
                                    WithConfigDefault("The config naming the state_dir"));
  cli->slurm_epilog_cmd->add_option("--job", cli->slurm_epilog.job,
                                    "The Slurm job id (default: $SLURM_JOB_ID)");
  cli->slurm_epilog_cmd
      ->add_option("--wait", cli->slurm_epilog.wait,
                   "At most this long for the job's incident and its bundle")
      ->capture_default_str();
  cli->slurm_epilog_cmd
      ->add_option("--settle", cli->slurm_epilog.settle,
                   "How long to look for an incident of the job at all")
      ->capture_default_str();

  cli->scan_cmd = app.add_subcommand(
      "scan", "Run the rules over log files; exit 1 if a crash, hang or device rule fired");
  CLI::App& scan = *cli->scan_cmd;
  // One value per flag (repeat it for more): else `--rules my.yaml a.log b.log` took the
  // logs for rule files.
  scan.add_option("--rules", cli->scan.rule_paths,
                  "Rule file or directory (repeatable; default: the shipped packs)")
      ->allow_extra_args(false);
  scan.add_option("--tag", cli->scan.tags,
                  "Tag of the source the files stand for: train, habana, kmsg, ... "
                  "(repeatable: a source may carry several)")
      ->allow_extra_args(false)
      ->capture_default_str();
  scan.add_option("--config", cli->scan.config_path,
                  "Group firings into incidents with this config's incident settings "
                  "(settle, cooldown, follow_up; default: the built-in ones)")
      ->allow_extra_args(false);
  scan.add_option("--format", cli->scan_format, "Output format")
      ->check(CLI::IsMember({"text", "jsonl"}))
      ->capture_default_str();
  scan.add_option("files", cli->scan.files, "Log files to scan (- for standard input)")->required();

  // Group "" keeps it out of --help: it exists for the build, which renders its output
  // into the trainwatch(1) man page.
  cli->manual_cmd = app.add_subcommand("manual", "Print the trainwatch(1) manual page as Markdown");
  cli->manual_cmd->group("");
  // Hidden too: the daemon runs it to compile rule databases outside its own memory
  // (core/prefilter_compiler.h).
  cli->compile_prefilter_cmd = app.add_subcommand(
      "compile-prefilter", "Compile a prefilter database read from stdin (run by the daemon)");
  cli->compile_prefilter_cmd->group("");
  return cli;
}

}  // namespace trainwatch::cli
