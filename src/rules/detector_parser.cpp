#include "rules/detector_parser.h"

#include <re2/re2.h>

#include <algorithm>
#include <csignal>
#include <map>
#include <vector>

#include "config/yaml_shapes.h"
#include "core/regex_options.h"

namespace trainwatch::rules {
namespace {

const std::vector<std::string> kDetectorKeys = {
    "pattern", "threshold", "progress", "silence", "exit", "stack", "metric", "pace", "spread"};

struct SignalName {
  const char* name;
  int number;
};
const SignalName kSignals[] = {{"SIGHUP", SIGHUP},   {"SIGINT", SIGINT},   {"SIGQUIT", SIGQUIT},
                               {"SIGILL", SIGILL},   {"SIGTRAP", SIGTRAP}, {"SIGABRT", SIGABRT},
                               {"SIGBUS", SIGBUS},   {"SIGFPE", SIGFPE},   {"SIGKILL", SIGKILL},
                               {"SIGUSR1", SIGUSR1}, {"SIGSEGV", SIGSEGV}, {"SIGUSR2", SIGUSR2},
                               {"SIGPIPE", SIGPIPE}, {"SIGALRM", SIGALRM}, {"SIGTERM", SIGTERM},
                               {"SIGXCPU", SIGXCPU}, {"SIGXFSZ", SIGXFSZ}, {"SIGSYS", SIGSYS}};

// Each method that finds a problem records it in the reader and returns a neutral value.
class DetectorParser {
 public:
  explicit DetectorParser(config::YamlReader& yaml) : yaml_(yaml) {}

  void Parse(const YAML::Node& node, Rule& rule, const std::string& label) {
    std::vector<std::string> present;
    for (const auto& key : kDetectorKeys) {
      if (node[key]) {
        present.push_back(key);
      }
    }
    if (present.empty()) {
      yaml_.Fail(
          node,
          label +
              " has no detector: give one of pattern, threshold, progress, silence, exit, stack, "
              "metric, pace, spread");
      return;
    }
    if (present.size() > 1) {
      yaml_.Fail(node[present[1]], label + " has more than one detector ('" + present[0] +
                                       "' and '" + present[1] + "'); split it into two rules");
      return;
    }
    const std::string& which = present.front();
    const YAML::Node body = node[which];
    if (which != "pattern") {
      for (const char* key : {"unless", "multiline", "last_words"}) {
        if (node[key]) {
          yaml_.Fail(node[key],
                     label + ": '" + key + "' goes with 'pattern' at the rule level" +
                         (which == "threshold" ? " (inside 'threshold' for unless)" : ""));
        }
      }
    }
    if (which == "pattern") {
      PatternDetector detector;
      if (auto match = PatternField(body, "pattern")) {
        detector.match = *match;
      }
      if (auto unless = node["unless"]) {
        detector.unless = PatternField(unless, "unless");
      }
      if (auto last_words = node["last_words"]) {
        if (auto flag = yaml_.BoolField(last_words, "last_words")) {
          detector.last_words = *flag;
        }
      }
      if (auto multiline = node["multiline"]) {
        if (auto text = yaml_.Scalar(multiline, "multiline")) {
          if (*text == "python-traceback") {
            detector.multiline = Multiline::kPythonTraceback;
          } else {
            yaml_.Fail(multiline, label + ": unknown multiline mode '" + *text +
                                      "' (expected python-traceback)");
          }
        }
      }
      rule.detector = detector;
    } else if (which == "threshold") {
      if (!body.IsMap()) {
        yaml_.Fail(body, label + ": 'threshold' must be a mapping {pattern, count, within}");
        return;
      }
      yaml_.CheckKeys(body, {"pattern", "unless", "count", "within"}, "threshold");
      ThresholdDetector detector;
      if (auto match = body["pattern"]) {
        if (auto parsed = PatternField(match, "threshold pattern")) {
          detector.match = *parsed;
        }
      } else {
        yaml_.Fail(body, label + ": threshold has no 'pattern'");
      }
      if (auto unless = body["unless"]) {
        detector.unless = PatternField(unless, "unless");
      }
      if (auto count = body["count"]) {
        if (auto value =
                config::WholeNumber(yaml_, count, label + ": threshold count", 1, 1000000)) {
          detector.count = static_cast<std::uint32_t>(*value);
        }
      } else {
        yaml_.Fail(body, label + ": threshold has no 'count'");
      }
      if (auto within = body["within"]) {
        if (auto parsed = yaml_.DurationField(within, "threshold within")) {
          detector.within = *parsed;
        }
      } else {
        yaml_.Fail(body, label + ": threshold has no 'within' (e.g. within: 5m)");
      }
      rule.detector = detector;
    } else if (which == "progress") {
      if (!body.IsMap()) {
        yaml_.Fail(body, label +
                             ": 'progress' must be a mapping {stall_after, startup_grace, factor, "
                             "min}");
        return;
      }
      yaml_.CheckKeys(body, {"stall_after", "startup_grace", "factor", "min"}, "progress");
      ProgressDetector detector;
      RequiredDuration(body, "progress", "stall_after", "10m", label, detector.stall_after);
      if (auto grace = body["startup_grace"]) {
        if (auto parsed = yaml_.DurationField(grace, "progress startup_grace")) {
          detector.startup_grace = *parsed;
        }
      }
      ParseLearnedStall(body, detector, label);
      rule.detector = detector;
    } else if (which == "silence") {
      if (!body.IsMap()) {
        yaml_.Fail(body, label + ": 'silence' must be a mapping {after}");
        return;
      }
      yaml_.CheckKeys(body, {"after"}, "silence");
      SilenceDetector detector;
      RequiredDuration(body, "silence", "after", "30m", label, detector.after);
      rule.detector = detector;
    } else if (which == "stack") {
      ParseStack(body, rule, label);
    } else if (which == "metric") {
      ParseMetric(body, rule, label);
    } else if (which == "pace") {
      ParsePace(body, rule, label);
    } else if (which == "spread") {
      ParseSpread(body, rule, label);
    } else {
      ParseExit(body, rule, label);
    }
  }

 private:
  // `metric: {name, not_finite_for, pattern, unless}`: the loss read from the lines the
  // `pattern` picks (default: those that say "loss").
  void ParseMetric(const YAML::Node& body, Rule& rule, const std::string& label) {
    if (!body.IsMap()) {
      yaml_.Fail(body, label + ": 'metric' must be a mapping {name, not_finite_for, pattern}");
      return;
    }
    yaml_.CheckKeys(body, {"name", "not_finite_for", "pattern", "unless"}, "metric");
    MetricDetector detector;
    detector.match = Pattern{std::string(kMetricLossWord), yaml_.Where(body)};
    if (auto name = body["name"]) {
      if (auto text = yaml_.Scalar(name, "metric name")) {
        if (*text != "loss") {
          yaml_.Fail(name, label + ": metric '" + *text + "' is not read (only loss is)");
        }
      }
    }
    if (auto count = body["not_finite_for"]) {
      if (auto value =
              config::WholeNumber(yaml_, count, label + ": metric not_finite_for", 1, 1000000)) {
        detector.not_finite_for = static_cast<std::uint32_t>(*value);
      }
    }
    if (auto match = body["pattern"]) {
      if (auto parsed = PatternField(match, "metric pattern")) {
        detector.match = *parsed;
      }
    }
    if (auto unless = body["unless"]) {
      detector.unless = PatternField(unless, "metric unless");
    }
    rule.detector = detector;
  }

  // `stack: {function, file, says}`: a pattern on a hang's stacks, for kind hang only.
  void ParseStack(const YAML::Node& body, Rule& rule, const std::string& label) {
    if (!body.IsMap()) {
      yaml_.Fail(body, label + ": 'stack' must be a mapping {function, file, says}");
      return;
    }
    yaml_.CheckKeys(body, {"function", "file", "says"}, "stack");
    if (rule.kind != RuleKind::kHang) {
      yaml_.Fail(body, label + ": a stack rule judges a hang's stacks: its kind must be hang");
    }
    StackDetector detector;
    if (auto function = body["function"]) {
      if (auto parsed = PatternField(function, "stack function")) {
        detector.function = *parsed;
      }
    } else {
      yaml_.Fail(body, label + ": stack has no 'function' (a regex on a frame's function)");
    }
    if (auto file = body["file"]) {
      detector.file = PatternField(file, "stack file");
    }
    if (auto says = body["says"]) {
      if (auto text = yaml_.Scalar(says, "stack says")) {
        detector.says = *text;
      }
    }
    if (detector.says.empty()) {
      yaml_.Fail(body, label +
                           ": stack has no 'says' (e.g. says: '{rank} waits in {function} "
                           "at {file}:{line}')");
    }
    rule.detector = detector;
  }

  // `body[key]`, a duration above 0, into `out`; its absence is recorded with an `example`
  // ("10m"). `detector` names the body in messages ("progress").
  void RequiredDuration(const YAML::Node& body, const std::string& detector, const std::string& key,
                        const std::string& example, const std::string& label, Duration& out) {
    const YAML::Node node = body[key];
    if (!node) {
      yaml_.Fail(body, label + ": " + detector + " has no '" + key + "' (e.g. " + key + ": " +
                           example + ")");
      return;
    }
    if (auto parsed = yaml_.DurationField(node, detector + " " + key)) {
      out = *parsed;
      if (parsed->count() == 0) {
        yaml_.Fail(node, label + ": " + detector + " " + key + " must be more than 0");
      }
    }
  }

  // Compiles the regex once here so a typo is reported with its location at load time.
  std::optional<Pattern> PatternField(const YAML::Node& node, const std::string& what) {
    auto text = yaml_.Scalar(node, what);
    if (!text) {
      return std::nullopt;
    }
    if (text->empty()) {
      yaml_.Fail(node, what + " is empty");
      return std::nullopt;
    }
    RE2 re(*text, RegexOptions());
    if (!re.ok()) {
      yaml_.Fail(node, what + " is not a valid RE2 regex: " + re.error());
      return std::nullopt;
    }
    if (RE2::PartialMatch("", re)) {
      yaml_.Fail(node,
                 what + " '" + *text + "' matches the empty string, so it would match every line");
      return std::nullopt;
    }
    return Pattern{*text, yaml_.Where(node)};
  }

  // `pace: {slower_by, for, baseline}`: a slowdown against the bar's own recent pace.
  void ParsePace(const YAML::Node& body, Rule& rule, const std::string& label) {
    if (!body.IsMap()) {
      yaml_.Fail(body, label + ": 'pace' must be a mapping {slower_by, for, baseline}");
      return;
    }
    yaml_.CheckKeys(body, {"slower_by", "for", "baseline"}, "pace");
    if (rule.kind != RuleKind::kSlow) {
      yaml_.Fail(body, label + ": a pace rule tells a slowdown: its kind must be slow");
    }
    PaceDetector detector;
    if (const YAML::Node ratio = body["slower_by"]; !ratio) {
      yaml_.Fail(body, label + ": pace has no 'slower_by' (e.g. slower_by: 1.5)");
    } else if (auto value = Ratio(ratio, label + ": pace slower_by",
                                  "the step time now over the step time before")) {
      detector.slower_by = *value;
    }
    RequiredDuration(body, "pace", "for", "2m", label, detector.hold);
    RequiredDuration(body, "pace", "baseline", "10m", label, detector.baseline);
    rule.detector = detector;
  }

  // `spread: {pattern, above, for, unless}`: the job's own report of its fastest and slowest
  // rank, read from the groups `low` and `high` (and `rank`) of `pattern`.
  void ParseSpread(const YAML::Node& body, Rule& rule, const std::string& label) {
    if (!body.IsMap()) {
      yaml_.Fail(body, label + ": 'spread' must be a mapping {pattern, above, for, unless}");
      return;
    }
    yaml_.CheckKeys(body, {"pattern", "above", "for", "unless"}, "spread");
    if (rule.kind != RuleKind::kSlow) {
      yaml_.Fail(body, label + ": a spread rule tells a straggler: its kind must be slow");
    }
    SpreadDetector detector;
    if (const YAML::Node match = body["pattern"]) {
      if (auto parsed = PatternField(match, "spread pattern")) {
        const RE2 re(parsed->regex, RegexOptions());
        const std::map<std::string, int>& groups = re.NamedCapturingGroups();
        const bool beyond = std::any_of(groups.begin(), groups.end(), [](const auto& group) {
          return (group.first == "low" || group.first == "high" || group.first == "rank") &&
                 group.second > kMaxSpreadGroups;
        });
        if (beyond) {
          yaml_.Fail(match, label +
                                ": spread pattern's groups low, high and rank must be among "
                                "its first " +
                                std::to_string(kMaxSpreadGroups) +
                                " groups (make the others non-capturing: (?:...))");
        } else if (!groups.contains("low") || !groups.contains("high")) {
          yaml_.Fail(match, label +
                                ": spread pattern must name the groups 'low' and 'high' (the "
                                "fastest and the slowest rank's numbers, e.g. "
                                "'Min: (?P<low>[0-9.]+)ms .* Max: (?P<high>[0-9.]+)ms')");
        } else {
          detector.match = *parsed;
        }
      }
    } else {
      yaml_.Fail(body, label + ": spread has no 'pattern'");
    }
    if (const YAML::Node unless = body["unless"]) {
      detector.unless = PatternField(unless, "spread unless");
    }
    if (const YAML::Node above = body["above"]; !above) {
      yaml_.Fail(body, label + ": spread has no 'above' (e.g. above: 1.2)");
    } else if (auto value = Ratio(above, label + ": spread above",
                                  "the slowest rank's number over the fastest's")) {
      detector.above = *value;
    }
    if (const YAML::Node count = body["for"]) {
      if (auto parsed = config::WholeNumber(yaml_, count, label + ": spread for", 1, 1000)) {
        detector.for_reports = static_cast<std::uint32_t>(*parsed);
      }
    }
    rule.detector = detector;
  }

  // A ratio above 1, at most 100 (NaN refused: it compares false both ways); else recorded as
  // "<what> must be a number above 1, at most 100 (<meaning>)".
  std::optional<double> Ratio(const YAML::Node& node, const std::string& what,
                              const std::string& meaning) {
    double value = 0;
    if (!node.IsScalar() || !YAML::convert<double>::decode(node, value) ||
        !(value > 1 && value <= 100)) {
      yaml_.Fail(node, what + " must be a number above 1, at most 100 (" + meaning + ")");
      return std::nullopt;
    }
    return value;
  }

  // `factor` and `min`: the stall threshold learnt from the bar's own pace.
  void ParseLearnedStall(const YAML::Node& body, ProgressDetector& detector,
                         const std::string& label) {
    const YAML::Node factor = body["factor"];
    const YAML::Node min = body["min"];
    if (!factor) {
      if (min) {
        yaml_.Fail(min, label + ": progress 'min' goes with 'factor' (e.g. factor: 10, min: 1m)");
      }
      return;
    }
    double value = 0;
    if (!factor.IsScalar() || !YAML::convert<double>::decode(factor, value) ||
        !(value >= 1 && value <= 1000)) {  // NaN too
      yaml_.Fail(factor, label +
                             ": progress factor must be a number from 1 to 1000 (times the "
                             "recent p99 interval between advances)");
      return;
    }
    detector.factor = value;
    if (!min) {
      yaml_.Fail(body, label + ": progress with 'factor' needs 'min' (the floor, e.g. min: 1m)");
      return;
    }
    if (auto parsed = yaml_.DurationField(min, "progress min")) {
      detector.min = *parsed;
      if (detector.stall_after.count() > 0 && *parsed > detector.stall_after) {
        yaml_.Fail(min, label + ": progress min is above stall_after (the cap)");
      }
    }
  }

  void ParseExit(const YAML::Node& body, Rule& rule, const std::string& label) {
    if (!body.IsMap()) {
      yaml_.Fail(body, label + ": 'exit' must be a mapping {codes, signals, nonzero}");
      return;
    }
    yaml_.CheckKeys(body, {"codes", "signals", "nonzero"}, "exit");
    ExitDetector detector;
    if (auto codes = body["codes"]) {
      if (!codes.IsSequence()) {
        yaml_.Fail(codes, label + ": exit codes must be a list, like [1, 137]");
      } else {
        for (const auto& code : codes) {
          if (auto value = config::WholeNumber(yaml_, code, label + ": exit code", 0, 255)) {
            detector.codes.push_back(static_cast<int>(*value));
          }
        }
      }
    }
    if (auto signals = body["signals"]) {
      if (!signals.IsSequence()) {
        yaml_.Fail(signals, label + ": exit signals must be a list, like [SIGKILL, SIGSEGV]");
      } else {
        for (const auto& signal : signals) {
          std::string name = signal.IsScalar() ? signal.Scalar() : "";
          auto found = std::find_if(std::begin(kSignals), std::end(kSignals),
                                    [&](const SignalName& s) { return name == s.name; });
          if (found == std::end(kSignals)) {
            yaml_.Fail(signal, label + ": unknown signal '" + name + "' (use names like SIGKILL)");
          } else {
            detector.signals.push_back(found->number);
          }
        }
      }
    }
    if (auto nonzero = body["nonzero"]) {
      detector.any_nonzero = yaml_.BoolField(nonzero, label + ": exit nonzero").value_or(false);
    }
    if (detector.codes.empty() && detector.signals.empty() && !detector.any_nonzero) {
      yaml_.Fail(body, label + ": exit needs codes, signals or nonzero: true");
    }
    rule.detector = detector;
  }

  config::YamlReader& yaml_;
};

}  // namespace

void ParseDetector(const YAML::Node& node, Rule& rule, const std::string& label,
                   config::YamlReader& yaml) {
  DetectorParser(yaml).Parse(node, rule, label);
}

}  // namespace trainwatch::rules
