#include "rules/rule_loader.h"

#include <re2/re2.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "rules/regex_options.h"

namespace trainwatch::rules {
namespace {

namespace fs = std::filesystem;

// A rule file larger than this is not a rule file (a log passed by mistake, say).
constexpr std::uintmax_t kMaxRuleFileBytes = 4 << 20;

const std::set<std::string, std::less<>> kRuleKeys = {
    "id",        "kind",      "tags",     "description", "pattern", "unless",
    "multiline", "threshold", "progress", "silence",     "exit",    "examples"};
const std::vector<std::string> kDetectorKeys = {"pattern", "threshold", "progress", "silence",
                                                "exit"};

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

// A problem with a whole file (no line to point at).
Diagnostic FileProblem(const std::string& file, std::string message) {
  Diagnostic diagnostic;
  diagnostic.where.file = file;
  diagnostic.message = std::move(message);
  return diagnostic;
}

// Parses one file; every method that finds a problem records it and returns a neutral value
// so parsing goes on and the operator sees all problems at once.
class RuleFileParser {
 public:
  // `ids` holds the ids of every rule loaded so far in this load, so a duplicate across packs
  // is caught too.
  RuleFileParser(const std::string& file, LoadedRules& out,
                 std::map<std::string, SourceLocation>& ids)
      : file_(file), out_(out), ids_(ids) {}

  void Parse(std::string_view text) {
    std::vector<YAML::Node> documents;
    try {
      documents = YAML::LoadAll(std::string(text));
    } catch (const YAML::Exception& e) {
      Fail(e.mark, "malformed YAML: " + e.msg);
      return;
    }
    // A second document ("---") would be silently ignored by a plain load: its rules would
    // never run and `check` would call the file fine.
    for (std::size_t i = 1; i < documents.size(); ++i) {
      if (!documents[i] || documents[i].IsNull()) {
        continue;  // a trailing "---" or a document of comments holds nothing to lose
      }
      Fail(documents[i],
           "a rule file holds one YAML document; this one (after '---') would be "
           "ignored: move its rules into the first 'rules:' list or another file");
    }
    const YAML::Node root = documents.empty() ? YAML::Node() : documents.front();
    if (!root || root.IsNull()) {
      Diagnostic empty = FileProblem(file_, "empty rule file: expected a top-level 'rules:' list");
      empty.where.line = 1;
      out_.errors.push_back(std::move(empty));
      return;
    }
    if (!root.IsMap()) {
      Fail(root, "expected a mapping with a 'rules:' list at the top level");
      return;
    }
    CheckKeys(root, {"rules"}, "the file");
    const YAML::Node list = root["rules"];
    if (!list) {
      Fail(root, "missing top-level 'rules:' list");
      return;
    }
    if (!list.IsSequence()) {
      Fail(list, "'rules' must be a list of rules");
      return;
    }
    for (const auto& node : list) {
      ParseRule(node);
    }
  }

 private:
  SourceLocation Where(const YAML::Mark& mark) const {
    // yaml-cpp counts from 0 and uses -1 for "unknown".
    return {file_, mark.line >= 0 ? mark.line + 1 : 0, mark.column >= 0 ? mark.column + 1 : 0};
  }
  SourceLocation Where(const YAML::Node& node) const { return Where(node.Mark()); }
  void Fail(const YAML::Mark& mark, std::string message) {
    out_.errors.push_back({Where(mark), std::move(message)});
  }
  void Fail(const YAML::Node& node, std::string message) { Fail(node.Mark(), std::move(message)); }

  // An empty value ("pattern:" and nothing after it) has the position of whatever comes
  // next; the operator wants the key's line, so CheckKeys remembers where keys are.
  YAML::Mark MarkOf(const YAML::Node& node, const std::string& what) const {
    if (node.IsNull()) {
      const std::string key = what.substr(what.rfind(' ') + 1);
      if (auto it = key_marks_.find(key); it != key_marks_.end()) {
        return it->second;
      }
    }
    return node.Mark();
  }

  std::optional<std::string> Scalar(const YAML::Node& node, const std::string& what) {
    if (node.IsNull()) {
      Fail(MarkOf(node, what), what + " has no value");
      return std::nullopt;
    }
    if (!node.IsScalar()) {
      Fail(node, what + " must be a single value");
      return std::nullopt;
    }
    return node.Scalar();
  }

  std::optional<Duration> DurationField(const YAML::Node& node, const std::string& what) {
    auto text = Scalar(node, what);
    if (!text) {
      return std::nullopt;
    }
    auto parsed = ParseDuration(*text);
    if (!parsed) {
      Fail(node, what + ": " + parsed.error().message);
      return std::nullopt;
    }
    return *parsed;
  }

  // Compiles the regex once here so a typo is reported with its location at load time.
  std::optional<Pattern> PatternField(const YAML::Node& node, const std::string& what) {
    auto text = Scalar(node, what);
    if (!text) {
      return std::nullopt;
    }
    if (text->empty()) {
      Fail(node, what + " is empty");
      return std::nullopt;
    }
    RE2 re(*text, RegexOptions());
    if (!re.ok()) {
      Fail(node, what + " is not a valid RE2 regex: " + re.error());
      return std::nullopt;
    }
    if (RE2::PartialMatch("", re)) {
      Fail(node, what + " '" + *text + "' matches the empty string, so it would match every line");
      return std::nullopt;
    }
    return Pattern{*text, Where(node)};
  }

  void CheckKeys(const YAML::Node& map, const std::set<std::string, std::less<>>& allowed,
                 const std::string& where) {
    std::set<std::string> seen;
    for (const auto& entry : map) {
      std::string key = entry.first.as<std::string>("");
      key_marks_[key] = entry.first.Mark();
      if (!allowed.contains(key)) {
        std::string list;
        for (const auto& name : allowed) {
          list += (list.empty() ? "" : ", ") + name;
        }
        Fail(entry.first,
             "unknown key '" + key + "' in " + where + " (expected one of: " + list + ")");
      } else if (!seen.insert(key).second) {
        Fail(entry.first, "key '" + key + "' appears twice in " + where);
      }
    }
  }

  void ParseRule(const YAML::Node& node) {
    if (!node.IsMap()) {
      Fail(node, "each entry of 'rules' must be a mapping with id, kind, tags, ...");
      return;
    }
    Rule rule;
    rule.where = Where(node);
    key_marks_.clear();
    const size_t errors_before = out_.errors.size();
    CheckKeys(node, kRuleKeys, "a rule");

    if (auto id = node["id"]) {
      if (auto text = Scalar(id, "id")) {
        static const RE2 kIdShape(R"([a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)+)");
        if (!RE2::FullMatch(*text, kIdShape)) {
          Fail(id, "id '" + *text +
                       "' must be dotted lowercase words, like 'nvidia.xid.fatal' (a-z, 0-9, _ -)");
        }
        rule.id = *text;
      }
    } else {
      Fail(node, "rule has no 'id'");
    }
    std::string label = rule.id.empty() ? std::string("rule") : "rule '" + rule.id + "'";

    if (auto kind = node["kind"]) {
      if (auto text = Scalar(kind, "kind")) {
        if (auto parsed = ParseRuleKind(*text)) {
          rule.kind = *parsed;
        } else {
          Fail(kind,
               label + ": unknown kind '" + *text + "' (expected crash, hang, device or warning)");
        }
      }
    } else {
      Fail(node, label + " has no 'kind' (crash, hang, device or warning)");
    }

    if (auto tags = node["tags"]) {
      if (!tags.IsSequence() || tags.size() == 0) {
        Fail(tags, label + ": 'tags' must be a non-empty list, like [train]");
      } else {
        for (const auto& tag : tags) {
          if (auto text = Scalar(tag, "a tag")) {
            rule.tags.push_back(*text);
          }
        }
      }
    } else {
      Fail(node, label + " has no 'tags' (the sources it applies to, like [train])");
    }

    if (auto description = node["description"]) {
      if (auto text = Scalar(description, "description"); text && !text->empty()) {
        rule.description = *text;
      } else if (text) {
        Fail(description, label + ": 'description' is empty");
      }
    } else {
      Fail(node, label + " has no 'description'");
    }

    ParseDetector(node, rule, label);
    ParseExamples(node, rule, label);

    if (!rule.id.empty()) {
      auto [it, inserted] = ids_.try_emplace(rule.id, rule.where);
      if (!inserted) {
        Fail(node["id"], "duplicate rule id '" + rule.id + "' (first defined at " +
                             it->second.file + ":" + std::to_string(it->second.line) + ")");
      }
    }
    if (out_.errors.size() == errors_before) {
      out_.rules.push_back(std::move(rule));
    }
  }

  void ParseDetector(const YAML::Node& node, Rule& rule, const std::string& label) {
    std::vector<std::string> present;
    for (const auto& key : kDetectorKeys) {
      if (node[key]) {
        present.push_back(key);
      }
    }
    if (present.empty()) {
      Fail(node,
           label + " has no detector: give one of pattern, threshold, progress, silence, exit");
      return;
    }
    if (present.size() > 1) {
      Fail(node[present[1]], label + " has more than one detector ('" + present[0] + "' and '" +
                                 present[1] + "'); split it into two rules");
      return;
    }
    const std::string& which = present.front();
    const YAML::Node body = node[which];
    if (which != "pattern") {
      for (const char* key : {"unless", "multiline"}) {
        if (node[key]) {
          Fail(node[key], label + ": '" + key + "' goes with 'pattern' at the rule level" +
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
      if (auto multiline = node["multiline"]) {
        if (auto text = Scalar(multiline, "multiline")) {
          if (*text == "python-traceback") {
            detector.multiline = Multiline::kPythonTraceback;
          } else {
            Fail(multiline,
                 label + ": unknown multiline mode '" + *text + "' (expected python-traceback)");
          }
        }
      }
      rule.detector = detector;
    } else if (which == "threshold") {
      if (!body.IsMap()) {
        Fail(body, label + ": 'threshold' must be a mapping {pattern, count, within}");
        return;
      }
      CheckKeys(body, {"pattern", "unless", "count", "within"}, "threshold");
      ThresholdDetector detector;
      if (auto match = body["pattern"]) {
        if (auto parsed = PatternField(match, "threshold pattern")) {
          detector.match = *parsed;
        }
      } else {
        Fail(body, label + ": threshold has no 'pattern'");
      }
      if (auto unless = body["unless"]) {
        detector.unless = PatternField(unless, "unless");
      }
      if (auto count = body["count"]) {
        int value = 0;
        if (!YAML::convert<int>::decode(count, value) || value < 1 || value > 1000000) {
          Fail(count, label + ": threshold count must be a whole number from 1 to 1000000");
        } else {
          detector.count = static_cast<std::uint32_t>(value);
        }
      } else {
        Fail(body, label + ": threshold has no 'count'");
      }
      if (auto within = body["within"]) {
        if (auto parsed = DurationField(within, "threshold within")) {
          detector.within = *parsed;
        }
      } else {
        Fail(body, label + ": threshold has no 'within' (e.g. within: 5m)");
      }
      rule.detector = detector;
    } else if (which == "progress") {
      if (!body.IsMap()) {
        Fail(body, label + ": 'progress' must be a mapping {stall_after, startup_grace}");
        return;
      }
      CheckKeys(body, {"stall_after", "startup_grace"}, "progress");
      ProgressDetector detector;
      if (auto stall = body["stall_after"]) {
        if (auto parsed = DurationField(stall, "progress stall_after")) {
          detector.stall_after = *parsed;
          if (parsed->count() == 0) {
            Fail(stall, label + ": progress stall_after must be more than 0");
          }
        }
      } else {
        Fail(body, label + ": progress has no 'stall_after' (e.g. stall_after: 10m)");
      }
      if (auto grace = body["startup_grace"]) {
        if (auto parsed = DurationField(grace, "progress startup_grace")) {
          detector.startup_grace = *parsed;
        }
      }
      rule.detector = detector;
    } else if (which == "silence") {
      if (!body.IsMap()) {
        Fail(body, label + ": 'silence' must be a mapping {after}");
        return;
      }
      CheckKeys(body, {"after"}, "silence");
      SilenceDetector detector;
      if (auto after = body["after"]) {
        if (auto parsed = DurationField(after, "silence after")) {
          detector.after = *parsed;
          if (parsed->count() == 0) {
            Fail(after, label + ": silence after must be more than 0");
          }
        }
      } else {
        Fail(body, label + ": silence has no 'after' (e.g. after: 30m)");
      }
      rule.detector = detector;
    } else {
      ParseExit(body, rule, label);
    }
  }

  void ParseExit(const YAML::Node& body, Rule& rule, const std::string& label) {
    if (!body.IsMap()) {
      Fail(body, label + ": 'exit' must be a mapping {codes, signals, nonzero}");
      return;
    }
    CheckKeys(body, {"codes", "signals", "nonzero"}, "exit");
    ExitDetector detector;
    if (auto codes = body["codes"]) {
      if (!codes.IsSequence()) {
        Fail(codes, label + ": exit codes must be a list, like [1, 137]");
      } else {
        for (const auto& code : codes) {
          int value = 0;
          if (!YAML::convert<int>::decode(code, value) || value < 0 || value > 255) {
            Fail(code, label + ": exit code must be a number from 0 to 255");
          } else {
            detector.codes.push_back(value);
          }
        }
      }
    }
    if (auto signals = body["signals"]) {
      if (!signals.IsSequence()) {
        Fail(signals, label + ": exit signals must be a list, like [SIGKILL, SIGSEGV]");
      } else {
        for (const auto& signal : signals) {
          std::string name = signal.IsScalar() ? signal.Scalar() : "";
          auto found = std::find_if(std::begin(kSignals), std::end(kSignals),
                                    [&](const SignalName& s) { return name == s.name; });
          if (found == std::end(kSignals)) {
            Fail(signal, label + ": unknown signal '" + name + "' (use names like SIGKILL)");
          } else {
            detector.signals.push_back(found->number);
          }
        }
      }
    }
    if (auto nonzero = body["nonzero"]) {
      if (!YAML::convert<bool>::decode(nonzero, detector.any_nonzero)) {
        Fail(nonzero, label + ": exit nonzero must be true or false");
      }
    }
    if (detector.codes.empty() && detector.signals.empty() && !detector.any_nonzero) {
      Fail(body, label + ": exit needs codes, signals or nonzero: true");
    }
    rule.detector = detector;
  }

  void ParseExamples(const YAML::Node& node, Rule& rule, const std::string& label) {
    const YAML::Node examples = node["examples"];
    if (!rule.MatchesLines()) {
      if (examples) {
        Fail(examples, label + ": examples apply to pattern and threshold rules only");
      }
      return;
    }
    if (!examples) {
      Fail(node, label +
                     " has no 'examples' ({fires: [...], quiet: [...]}); every line rule "
                     "carries text it must fire on and text it must stay quiet on");
      return;
    }
    if (!examples.IsMap()) {
      Fail(examples, label + ": 'examples' must be a mapping {fires: [...], quiet: [...]}");
      return;
    }
    CheckKeys(examples, {"fires", "quiet"}, "examples");
    for (auto [key, list] : {std::pair{"fires", &rule.fires}, std::pair{"quiet", &rule.quiet}}) {
      const YAML::Node items = examples[key];
      if (!items || !items.IsSequence() || items.size() == 0) {
        Fail(items ? items : examples, label + ": examples need a non-empty '" + key + "' list");
        continue;
      }
      for (const auto& item : items) {
        if (auto text = Scalar(item, std::string("an example in '") + key + "'")) {
          list->push_back({*text, Where(item)});
        }
      }
    }
  }

  const std::string& file_;
  LoadedRules& out_;
  std::map<std::string, SourceLocation>& ids_;
  std::map<std::string, YAML::Mark> key_marks_;  // keys of the rule being parsed
};

}  // namespace

void LoadRuleText(std::string_view text, const std::string& file_name, LoadedRules& out) {
  // Ids already loaded (from earlier files of the same load) must not be reused.
  std::map<std::string, SourceLocation> ids;
  for (const Rule& rule : out.rules) {
    ids.emplace(rule.id, rule.where);
  }
  RuleFileParser parser(file_name, out, ids);
  parser.Parse(text);
}

LoadedRules LoadRulePaths(const std::vector<std::string>& paths) {
  LoadedRules out;
  auto load_file = [&](const fs::path& path) {
    const std::string name = path.string();
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    if (ec) {
      out.errors.push_back(FileProblem(name, "cannot read rule file: " + ec.message()));
      return;
    }
    if (size > kMaxRuleFileBytes) {
      out.errors.push_back(FileProblem(name, "rule file is " + std::to_string(size) +
                                                 " bytes; rule files are limited to 4 MiB"));
      return;
    }
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in && !in.eof()) {
      out.errors.push_back(FileProblem(name, "cannot read rule file"));
      return;
    }
    out.files.push_back(name);
    LoadRuleText(text.str(), name, out);
  };

  for (const std::string& path_text : paths) {
    const fs::path path(path_text);
    std::error_code ec;
    const auto status = fs::status(path, ec);
    if (ec || !fs::exists(status)) {
      out.errors.push_back(FileProblem(path_text, "no such rule file or directory"));
      continue;
    }
    if (!fs::is_directory(status)) {
      load_file(path);
      continue;
    }
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(path, ec)) {
      const auto ext = entry.path().extension();
      if ((ext == ".yaml" || ext == ".yml") && entry.is_regular_file()) {
        files.push_back(entry.path());
      }
    }
    if (ec) {
      out.errors.push_back(FileProblem(path_text, "cannot list rule directory: " + ec.message()));
      continue;
    }
    if (files.empty()) {
      out.errors.push_back(FileProblem(path_text, "rule directory has no *.yaml files"));
      continue;
    }
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
      load_file(file);
    }
  }
  return out;
}

}  // namespace trainwatch::rules
