#include "cli/node_verdict_command.h"

#include <uv.h>

#include <cstdlib>
#include <memory>
#include <thread>

#include "capture/job_identity.h"
#include "cli/cli_config.h"
#include "collect/command_runner.h"
#include "collect/stuck_ranks.h"
#include "core/posix_env.h"
#include "core/proc_files.h"
#include "core/quantity.h"
#include "ops/incident_log.h"
#include "ops/node_verdict.h"

namespace trainwatch::cli {
namespace {

// The quickest question each device tool answers: a wedged device or a lost driver fails it.
struct DeviceTool {
  const char* tool;
  std::vector<std::string> argv;
};
const DeviceTool kDeviceTools[] = {
    {"hl-smi", {"hl-smi", "-Q", "index,name,bus_id", "-f", "csv"}},
    {"nvidia-smi", {"nvidia-smi", "-L"}},
    {"npu-smi", {"npu-smi", "info"}},
};

// The last bytes of a tool's output, one line, for a reason.
std::string Tail(const collect::CollectorResult& result) {
  std::string text = result.detail;
  for (const collect::Artifact& artifact : result.artifacts) {
    if (!artifact.content.empty()) {
      text = artifact.content;
    }
  }
  for (char& c : text) {
    if (c == '\n' || c == '\r' || c == '\t') {
      c = ' ';
    }
  }
  return text.size() > 200 ? "..." + text.substr(text.size() - 200) : text;
}

std::vector<ops::DeviceCheck> AskDevices(Duration timeout) {
  std::vector<config::CommandConfig> commands;
  for (const DeviceTool& device : kDeviceTools) {
    config::CommandConfig command;
    command.name = device.tool;
    command.argv = device.argv;
    command.timeout = timeout;
    command.max_output_bytes = 64 * 1024;
    command.as = std::string("device/") + device.tool + ".txt";
    commands.push_back(std::move(command));
  }
  std::vector<collect::CollectorResult> results;
  uv_loop_t loop;
  uv_loop_init(&loop);
  {
    PosixEnv env(&loop);
    collect::CommandRunner runner(env);
    runner.Run(commands,
               [&](std::vector<collect::CollectorResult> done) { results = std::move(done); });
    uv_run(&loop, UV_RUN_DEFAULT);
  }
  uv_run(&loop, UV_RUN_DEFAULT);  // the handles closed
  uv_loop_close(&loop);
  std::vector<ops::DeviceCheck> checks;
  for (std::size_t i = 0; i < results.size() && i < std::size(kDeviceTools); ++i) {
    const collect::CollectorResult& result = results[i];
    ops::DeviceCheck check;
    check.tool = kDeviceTools[i].tool;
    check.seconds = result.duration_seconds;
    using Status = collect::CollectorStatus;
    using Result = ops::DeviceCheck::Result;
    switch (result.status) {
      case Status::kOk:
        check.result = Result::kAnswered;
        break;
      case Status::kMissing:
        check.result = Result::kMissing;
        break;
      case Status::kTimedOut:
      case Status::kAbandoned:
        check.result = Result::kHung;
        check.seconds = std::chrono::duration<double>(timeout).count();
        check.detail = result.status == Status::kAbandoned ? "it would not die even of SIGKILL"
                                                           : "killed at its deadline";
        break;
      case Status::kNotPermitted:
        check.result = Result::kNotPermitted;
        check.detail = Tail(result);
        break;
      default:
        check.result = Result::kFailed;
        check.detail = "exit code " + std::to_string(result.exit_code) + ": " + Tail(result);
        break;
    }
    checks.push_back(std::move(check));
  }
  return checks;
}

// When the node booted, from the kernel's btime.
std::optional<detect::WallTime> BootTime(const std::string& proc_root) {
  const Result<ProcText> stat = ReadProcFile(proc_root + "/stat");
  if (!stat) {
    return std::nullopt;
  }
  const std::size_t at = stat->text.find("\nbtime ");
  if (at == std::string::npos) {
    return std::nullopt;
  }
  const char* digits = stat->text.c_str() + at + 7;
  char* end = nullptr;
  const long long seconds = std::strtoll(digits, &end, 10);
  if (end == digits || seconds <= 0) {
    return std::nullopt;
  }
  return detect::WallTime{} + std::chrono::seconds(seconds);
}

}  // namespace

int RunNodeVerdict(const NodeVerdictOptions& options, std::ostream& out, std::ostream& err) {
  Result<Duration> timeout = ParseDuration(options.timeout);
  if (!timeout || *timeout < std::chrono::milliseconds(100) || *timeout > std::chrono::minutes(5)) {
    err << "trainwatch node-verdict: --timeout " << options.timeout
        << ": expected a duration from 100ms to 5m, like 10s\n";
    return 4;
  }
  Result<config::DaemonConfig> config = LoadCliConfig(options.config_path, err);
  if (!config) {
    return 4;
  }
  ops::NodeFacts facts;
  const std::string host = capture::Hostname();
  facts.node = capture::NodeName(config->cluster, host).first;
  facts.now = options.now;
  facts.booted = BootTime(options.proc_root);
  facts.incidents_file = config->state_dir + "/incidents.jsonl";
  if (Result<std::string> text = ops::IncidentLog(facts.incidents_file).ReadTail()) {
    facts.incidents = ops::NodeIncidentsOf(*text);
  } else {
    facts.incidents_error = text.error().message;
  }
  if (!options.skip_devices) {
    facts.devices = AskDevices(*timeout);
  }
  Result<collect::StuckScan> ranks = collect::FindStuckRanks(
      options.proc_root, 3, std::chrono::milliseconds(1000),
      [](std::chrono::milliseconds wait) { std::this_thread::sleep_for(wait); });
  if (ranks) {
    facts.ranks_checked = ranks->ranks;
    facts.stuck = ranks->stuck;
  } else {
    facts.ranks_error = ranks.error().message;
  }
  const ops::NodeVerdict verdict = ops::JudgeNode(facts);
  out << (options.json ? ops::NodeVerdictJson(verdict) + "\n" : ops::NodeVerdictText(verdict));
  return ops::ExitCodeOf(verdict.level);
}

}  // namespace trainwatch::cli
