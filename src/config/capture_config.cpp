#include "config/capture_config.h"

#include <re2/re2.h>

#include <charconv>
#include <map>

#include "config/yaml_shapes.h"
#include "core/regex_options.h"

namespace trainwatch::config {
namespace {

CommandConfig Command(std::string name, std::vector<std::string> argv, std::string as,
                      Duration timeout = std::chrono::seconds(10)) {
  CommandConfig command;
  command.name = std::move(name);
  command.argv = std::move(argv);
  command.as = std::move(as);
  command.timeout = timeout;
  return command;
}

class CaptureParser {
 public:
  CaptureParser(
      YamlReader& yaml,
      const std::function<std::optional<std::string>(const YAML::Node&, const std::string&)>& path)
      : yaml_(yaml), path_(path) {}

  void Parse(const YAML::Node& node, CaptureConfig& out) {
    if (!IsMap(yaml_, node, "capture", "{bundles_dir, max_count, commands, ...}")) {
      return;
    }
    yaml_.CheckKeys(node,
                    {"enabled", "bundles_dir", "max_count", "max_bytes", "min_free",
                     "log_tail_bytes", "habana_logs", "habana_logs_max_bytes", "extra_paths",
                     "extra_max_bytes", "process_pattern", "stacks", "max_ranks", "redact",
                     "commands", "compression_level", "stop_grace"},
                    "capture");
    if (const YAML::Node grace = node["stop_grace"]) {
      if (auto value = yaml_.DurationField(grace, "capture stop_grace")) {
        // systemd's TimeoutStopSec in the shipped unit is 30 s: past it the stop is a SIGKILL,
        // and nothing is recorded.
        if (*value > std::chrono::seconds(25)) {
          yaml_.Fail(grace,
                     "capture stop_grace must be at most 25s (the unit's stop timeout is 30s)");
        } else {
          out.stop_grace = *value;
        }
      }
    }
    for (auto [key, field] :
         {std::pair{"stacks", &out.stacks}, std::pair{"enabled", &out.enabled}}) {
      if (const YAML::Node value = node[key]) {
        *field = yaml_.BoolField(value, std::string("capture ") + key).value_or(*field);
      }
    }
    if (const YAML::Node dir = node["bundles_dir"]) {
      if (auto value = path_(dir, "capture bundles_dir")) {
        out.bundles_dir = *value;
      }
    }
    if (const YAML::Node count = node["max_count"]) {
      if (auto value = WholeNumber(yaml_, count, "capture max_count", 1, 100000)) {
        out.max_count = *value;
      }
    }
    if (const YAML::Node ranks = node["max_ranks"]) {
      if (auto value = WholeNumber(yaml_, ranks, "capture max_ranks", 1, 4096)) {
        out.max_ranks = *value;
      }
    }
    Size(node["max_bytes"], "capture max_bytes", out.max_bytes);
    if (const YAML::Node free = node["min_free"]) {
      MinFree(free, out);
    }
    Size(node["log_tail_bytes"], "capture log_tail_bytes", out.log_tail_bytes);
    if (const YAML::Node dir = node["habana_logs"]) {
      if (auto value = path_(dir, "capture habana_logs")) {
        out.habana_logs = *value;
      }
    }
    Size(node["habana_logs_max_bytes"], "capture habana_logs_max_bytes", out.habana_logs_max_bytes);
    if (const YAML::Node paths = node["extra_paths"]) {
      for (const auto& item : List(paths, "capture extra_paths")) {
        if (auto value = path_(item, "an extra path")) {
          out.extra_paths.push_back(*value);
        }
      }
    }
    Size(node["extra_max_bytes"], "capture extra_max_bytes", out.extra_max_bytes);
    if (const YAML::Node pattern = node["process_pattern"]) {
      if (auto text = yaml_.Scalar(pattern, "capture process_pattern")) {
        // Checked here, with the options it runs with: a typo must stop the config, not
        // surface as a warning at the first incident.
        if (const RE2 regex(*text, RegexOptions()); !regex.ok()) {
          yaml_.Fail(pattern, "capture process_pattern: " + regex.error());
        }
        out.process_pattern = *text;
      }
    }
    if (const YAML::Node redact = node["redact"]) {
      Redact(redact, out);
    }
    if (const YAML::Node level = node["compression_level"]) {
      if (auto value = WholeNumber(yaml_, level, "capture compression_level", 1, 19)) {
        out.compression_level = static_cast<int>(*value);
      }
    }
    if (const YAML::Node commands = node["commands"]) {
      out.commands.clear();
      for (const auto& item : List(commands, "capture commands")) {
        yaml_.ForgetKeys();
        if (auto command = ParseCommand(item)) {
          out.commands.push_back(std::move(*command));
        }
      }
    }
  }

  void Hooks(const YAML::Node& node, std::vector<CommandConfig>& out) {
    std::map<std::string, int> lines;  // name -> line of its first use
    for (const auto& item : List(node, "on_incident")) {
      yaml_.ForgetKeys();
      auto hook = ParseCommand(item, /*hook=*/true);
      if (!hook) {
        continue;
      }
      auto [it, inserted] = lines.try_emplace(hook->name, yaml_.Where(item["name"]).line);
      if (!inserted) {
        yaml_.Fail(item["name"], "on_incident hook '" + hook->name +
                                     "' is already defined at line " + std::to_string(it->second));
        continue;
      }
      out.push_back(std::move(*hook));
    }
  }

 private:
  std::vector<YAML::Node> List(const YAML::Node& node, const std::string& what) {
    std::vector<YAML::Node> items;
    if (node.IsNull()) {
      return items;  // "key:" with every entry commented out: an empty list
    }
    if (!node.IsSequence()) {
      yaml_.Fail(node, what + " must be a list");
      return items;
    }
    for (const auto& item : node) {
      items.push_back(item);
    }
    return items;
  }

  void Size(const YAML::Node& node, const std::string& what, std::uint64_t& out) {
    if (!node) {
      return;
    }
    auto text = yaml_.Scalar(node, what);
    if (!text) {
      return;
    }
    Result<std::uint64_t> value = ParseByteSize(*text);
    if (!value) {
      yaml_.Fail(node, what + ": " + value.error().message);
      return;
    }
    out = *value;
  }

  // "5%" of the file system, or a size ("10GiB").
  void MinFree(const YAML::Node& node, CaptureConfig& out) {
    auto text = yaml_.Scalar(node, "capture min_free");
    if (!text) {
      return;
    }
    if (!text->empty() && text->back() == '%') {
      double percent = -1;
      const std::string number = text->substr(0, text->size() - 1);
      const auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), percent);
      if (ec != std::errc() || ptr != number.data() + number.size() || percent < 0 ||
          percent > 90) {
        yaml_.Fail(node, "capture min_free must be a size (10GiB) or a percentage from 0% to 90%");
        return;
      }
      out.min_free_percent = percent;
      out.min_free_bytes = 0;
      return;
    }
    Result<std::uint64_t> value = ParseByteSize(*text);
    if (!value) {
      yaml_.Fail(node, "capture min_free: " + value.error().message);
      return;
    }
    out.min_free_bytes = *value;
    out.min_free_percent = 0;
  }

  void Redact(const YAML::Node& node, CaptureConfig& out) {
    if (!IsMap(yaml_, node, "capture redact", "{names: [...], patterns: [...]}")) {
      return;
    }
    yaml_.CheckKeys(node, {"names", "patterns"}, "capture redact");
    for (const auto& item : List(node["names"], "capture redact names")) {
      if (auto text = yaml_.Scalar(item, "a redacted name")) {
        out.redact_names.push_back(*text);
      }
    }
    for (const auto& item : List(node["patterns"], "capture redact patterns")) {
      if (auto text = yaml_.Scalar(item, "a redaction pattern")) {
        out.redact_patterns.push_back(*text);
      }
    }
  }

  // A command collector, or (`hook`) an on_incident hook, which has no bundle file.
  std::optional<CommandConfig> ParseCommand(const YAML::Node& node, bool hook = false) {
    const std::string what = hook ? "an on_incident hook" : "a command collector";
    if (!node.IsMap()) {
      yaml_.Fail(
          node, what + " must be a mapping {name, argv, " + (hook ? "timeout, when}" : "as, ...}"));
      return std::nullopt;
    }
    if (hook) {
      yaml_.CheckKeys(node, {"name", "argv", "timeout", "when"}, what);
    } else {
      yaml_.CheckKeys(node, {"name", "argv", "as", "timeout", "max_output_bytes", "keep", "when"},
                      what);
    }
    CommandConfig command;
    if (hook) {
      command.timeout = std::chrono::seconds(60);
      command.max_output_bytes = 64 * 1024;  // for the log line of a failure
    }
    bool ok = true;
    if (auto name = node["name"] ? yaml_.Scalar(node["name"], "command name") : std::nullopt) {
      command.name = *name;
      // Names become file names in bundles and label values in the metrics.
      if (!IsPlainName(*name)) {
        yaml_.Fail(node["name"], "command name '" + *name +
                                     "' must be letters, digits, '.', '_' or '-', starting with "
                                     "a letter or digit");
        ok = false;
      }
    } else {
      if (!node["name"]) {
        yaml_.Fail(node, what + " needs a name");
      }
      ok = false;
    }
    const YAML::Node argv = node["argv"];
    if (!argv || !argv.IsSequence() || argv.size() == 0) {
      yaml_.Fail(argv ? argv : node, what + " needs argv: a non-empty list");
      ok = false;
    } else {
      for (const auto& item : argv) {
        if (auto text = yaml_.Scalar(item, "an argv item")) {
          command.argv.push_back(*text);
        } else {
          ok = false;
        }
      }
    }
    if (auto as = node["as"] ? yaml_.Scalar(node["as"], "command as") : std::nullopt) {
      if (as->empty() || as->front() == '/' || as->find("..") != std::string::npos) {
        yaml_.Fail(node["as"], "command as must be a relative path inside the bundle");
        ok = false;
      }
      command.as = *as;
    } else {
      command.as = "commands/" + command.name + ".txt";
    }
    if (const YAML::Node timeout = node["timeout"]) {
      const Duration minimum = hook ? Duration(1000) : Duration(100);
      if (auto value = yaml_.DurationField(timeout, "command timeout")) {
        command.timeout = *value;
        if (*value < minimum) {
          yaml_.Fail(timeout,
                     "command timeout must be at least " + std::to_string(minimum.count()) + "ms");
          ok = false;
        }
      } else {
        ok = false;
      }
    }
    Size(node["max_output_bytes"], "command max_output_bytes", command.max_output_bytes);
    if (const YAML::Node keep = node["keep"]) {
      if (auto text = yaml_.Scalar(keep, "command keep")) {
        if (*text == "head" || *text == "tail") {
          command.keep_tail = *text == "tail";
        } else {
          yaml_.Fail(keep, "command keep must be head or tail");
          ok = false;
        }
      }
    }
    if (const YAML::Node when = node["when"]) {
      ok = ParseWhen(when, command.when) && ok;
    }
    return ok ? std::optional<CommandConfig>(std::move(command)) : std::nullopt;
  }

  // "always", or a list of incident kinds: [crash, hang, device, diverged, slow, manual,
  // warning, peer].
  bool ParseWhen(const YAML::Node& node, When& when) {
    if (node.IsScalar()) {
      if (node.Scalar() == "always") {
        when = When{true, true, true, true, true, true, true, true};
        return true;
      }
      yaml_.Fail(node, "command when must be 'always' or a list like [crash, hang, device]");
      return false;
    }
    when = When{false, false, false, false, false, false, false, false};
    bool ok = true;
    for (const auto& item : List(node, "command when")) {
      const std::string kind = item.IsScalar() ? item.Scalar() : "";
      if (kind == "crash") {
        when.crash = true;
      } else if (kind == "hang") {
        when.hang = true;
      } else if (kind == "device") {
        when.device = true;
      } else if (kind == "manual") {
        when.manual = true;
      } else if (kind == "warning") {
        when.warning = true;
      } else if (kind == "peer") {
        when.peer = true;
      } else if (kind == "diverged") {
        when.diverged = true;
      } else if (kind == "slow") {
        when.slow = true;
      } else {
        yaml_.Fail(item, "unknown incident kind '" + kind +
                             "' (expected crash, hang, device, diverged, slow, manual, warning "
                             "or peer)");
        ok = false;
      }
    }
    if (ok && !when.crash && !when.hang && !when.device && !when.manual && !when.warning &&
        !when.peer && !when.diverged && !when.slow) {
      yaml_.Fail(node, "command when is empty: it would never run (remove the command instead)");
      ok = false;
    }
    return ok;
  }

  YamlReader& yaml_;
  const std::function<std::optional<std::string>(const YAML::Node&, const std::string&)>& path_;
};

}  // namespace

std::vector<CommandConfig> DefaultCommands() {
  // hl-smi -Q: one CSV row per device with these fields.
  const char* const hl_smi_fields =
      "timestamp,index,name,bus_id,driver_version,utilization.aip,memory.used,memory.total,"
      "power.draw,temperature.aip";
  std::vector<CommandConfig> commands = {
      Command("hl-smi", {"hl-smi"}, "device/hl-smi.txt"),
      Command("hl-smi-q", {"hl-smi", "-q"}, "device/hl-smi-q.txt"),
      Command("hl-smi-csv", {"hl-smi", "-Q", hl_smi_fields, "-f", "csv"}, "device/hl-smi.csv"),
      Command("nvidia-smi-q", {"nvidia-smi", "-q"}, "device/nvidia-smi-q.txt"),
      // The report's device table; nvidia-smi -q says all of it, but at length.
      Command("nvidia-smi-csv",
              {"nvidia-smi",
               "--query-gpu=index,name,pci.bus_id,driver_version,utilization.gpu,memory.used,"
               "memory.total,temperature.gpu,power.draw,ecc.errors.uncorrected.volatile.total",
               "--format=csv"},
              "device/nvidia-smi.csv"),
      Command("npu-smi", {"npu-smi", "info"}, "device/npu-smi.txt"),
      Command("lspci", {"lspci", "-nn"}, "system/lspci.txt"),
      Command("dmesg", {"dmesg", "--kernel", "--ctime"}, "system/dmesg.txt"),
      Command("ps", {"ps", "-eo", "pid,ppid,user,stat,pcpu,pmem,rss,etime,args"}, "system/ps.txt"),
      Command("docker-ps", {"docker", "ps", "--no-trunc"}, "docker/ps.txt"),
      Command("docker-stats", {"docker", "stats", "--no-stream", "--no-trunc"}, "docker/stats.txt"),
      Command("docker-inspect", {"docker", "inspect", "{container}"}, "docker/inspect.json"),
      // The job as Slurm has it (its nodes, restarts, requeue and exit state), for an incident
      // of a Slurm job.
      Command("slurm-job", {"scontrol", "show", "job", "{slurm_job}"}, "slurm/job.txt"),
  };
  for (CommandConfig& command : commands) {
    if (command.name == "dmesg") {
      command.keep_tail = true;  // the newest messages matter
      command.max_output_bytes = 1ull << 20;
    }
  }
  // The ranks' stacks are not commands here: capture.stacks takes them (py-spy, gdb, eu-stack).
  // Nor are the job's Python packages: read from its own interpreter's folders
  // (collect/python_packages.h), where `pip list` took seconds and saw the daemon's Python.
  return commands;
}

void ParseHooks(const YAML::Node& node, YamlReader& yaml, std::vector<CommandConfig>& out) {
  CaptureParser(yaml, nullptr).Hooks(node, out);
}

void ParseCaptureConfig(
    const YAML::Node& node, YamlReader& yaml,
    const std::function<std::optional<std::string>(const YAML::Node&, const std::string&)>& path,
    CaptureConfig& out) {
  CaptureParser(yaml, path).Parse(node, out);
}

std::vector<std::string> CommandNames(const std::vector<CommandConfig>& commands) {
  std::vector<std::string> names;
  names.reserve(commands.size());
  for (const CommandConfig& command : commands) {
    names.push_back(command.name);
  }
  return names;
}

}  // namespace trainwatch::config
