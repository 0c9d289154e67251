#include "rules/rule_loader.h"

#include <fnmatch.h>
#include <re2/re2.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "config/yaml_reader.h"
#include "config/yaml_shapes.h"
#include "rules/detector_parser.h"

namespace trainwatch::rules {
namespace {

namespace fs = std::filesystem;

// A rule file larger than this is not a rule file (a log passed by mistake, say).
constexpr std::uintmax_t kMaxRuleFileBytes = 4 << 20;

const std::set<std::string, std::less<>> kRuleKeys = {
    "id",        "kind",     "tags",    "description", "pattern", "unless", "multiline",
    "threshold", "progress", "silence", "exit",        "stack",   "metric", "examples",
    "cause",     "action",   "role",    "last_words",  "pace",    "spread", "resolves"};

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
      : out_(out), ids_(ids), yaml_(file, out.errors), errors_at_start_(out.errors.size()) {}

  void Parse(std::string_view text) {
    const YAML::Node root = yaml_.ParseDocument(text);
    if (!root || root.IsNull()) {
      if (!had_errors()) {
        yaml_.FailAtStart("empty rule file: expected a top-level 'rules:' list");
      }
      return;
    }
    if (!root.IsMap()) {
      yaml_.Fail(root, "expected a mapping with a 'rules:' list at the top level");
      return;
    }
    yaml_.CheckKeys(root, {"rules", "verdicts"}, "the file");
    if (const YAML::Node verdicts = root["verdicts"]) {
      ParseVerdicts(verdicts);
    }
    const YAML::Node list = root["rules"];
    if (!list) {
      if (!root["verdicts"]) {
        yaml_.Fail(root, "missing top-level 'rules:' list");
      }
      return;
    }
    if (!list.IsSequence()) {
      yaml_.Fail(list, "'rules' must be a list of rules");
      return;
    }
    for (const auto& node : list) {
      ParseRule(node);
    }
  }

 private:
  // The value of a node's `key:` ("cause", "action") read by `parse`, if any; `names` lists
  // the allowed ones for the message.
  template <typename Parse>
  auto EnumField(const YAML::Node& node, const std::string& key, const std::string& label,
                 Parse parse, std::string_view names) -> decltype(parse(std::string_view())) {
    const YAML::Node field = node[key];
    if (!field) {
      return std::nullopt;
    }
    const std::optional<std::string> text = yaml_.Scalar(field, key);
    if (!text) {
      return std::nullopt;
    }
    auto value = parse(*text);
    if (!value) {
      yaml_.Fail(field, label + ": unknown " + key + " '" + *text + "' (expected " +
                            std::string(names) + ")");
    }
    return value;
  }
  std::optional<Cause> CauseField(const YAML::Node& node, const std::string& label) {
    return EnumField(node, "cause", label, ParseCause, kCauseNames);
  }
  std::optional<Action> ActionField(const YAML::Node& node, const std::string& label) {
    return EnumField(node, "action", label, ParseAction, kActionNames);
  }
  std::optional<Role> RoleField(const YAML::Node& node, const std::string& label) {
    return EnumField(node, "role", label, ParseRole, kRoleNames);
  }

  void ParseVerdicts(const YAML::Node& list) {
    if (!list.IsSequence()) {
      yaml_.Fail(list, "'verdicts' must be a list of {rule, cause, action}");
      return;
    }
    for (const YAML::Node& node : list) {
      if (!node.IsMap()) {
        yaml_.Fail(node, "each entry of 'verdicts' must be a mapping {rule, cause, action}");
        continue;
      }
      yaml_.ForgetKeys();
      yaml_.CheckKeys(node, {"rule", "cause", "action", "role"}, "a verdict");
      VerdictOverride override;
      override.where = yaml_.Where(node);
      if (const YAML::Node rule = node["rule"]) {
        if (std::optional<std::string> text = yaml_.Scalar(rule, "rule"); text && !text->empty()) {
          override.rule = *text;
        } else if (text) {
          yaml_.Fail(rule, "a verdict's 'rule' is empty");
        }
      } else {
        yaml_.Fail(node, "a verdict has no 'rule' (a rule id, or a glob like 'nvidia.xid.*')");
      }
      const std::string label = "verdict for '" + override.rule + "'";
      override.cause = CauseField(node, label);
      override.action = ActionField(node, label);
      override.role = RoleField(node, label);
      if (!node["cause"] && !node["action"] && !node["role"]) {
        yaml_.Fail(node, label + " sets none of 'cause', 'action' and 'role'");
      }
      if (!override.rule.empty() && (override.cause || override.action || override.role)) {
        out_.overrides.push_back(std::move(override));
      }
    }
  }

  void ParseRule(const YAML::Node& node) {
    if (!node.IsMap()) {
      yaml_.Fail(node, "each entry of 'rules' must be a mapping with id, kind, tags, ...");
      return;
    }
    Rule rule;
    rule.where = yaml_.Where(node);
    yaml_.ForgetKeys();
    const size_t errors_before = out_.errors.size();
    yaml_.CheckKeys(node, kRuleKeys, "a rule");

    if (auto id = node["id"]) {
      if (auto text = yaml_.Scalar(id, "id")) {
        static const RE2 kIdShape(R"([a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)+)");
        if (!RE2::FullMatch(*text, kIdShape)) {
          yaml_.Fail(
              id, "id '" + *text +
                      "' must be dotted lowercase words, like 'nvidia.xid.fatal' (a-z, 0-9, _ -)");
        }
        rule.id = *text;
      }
    } else {
      yaml_.Fail(node, "rule has no 'id'");
    }
    std::string label = rule.id.empty() ? std::string("rule") : "rule '" + rule.id + "'";

    if (auto kind = node["kind"]) {
      if (auto text = yaml_.Scalar(kind, "kind")) {
        if (auto parsed = ParseRuleKind(*text)) {
          rule.kind = *parsed;
        } else {
          yaml_.Fail(kind, label + ": unknown kind '" + *text +
                               "' (expected crash, hang, device or warning)");
        }
      }
    } else if (node["resolves"]) {
      rule.kind = RuleKind::kWarning;  // it opens nothing
    } else {
      yaml_.Fail(node, label + " has no 'kind' (crash, hang, device or warning)");
    }

    if (auto tags = node["tags"]) {
      if (config::IsNonEmptyList(yaml_, tags, label + ": tags", "[train]")) {
        for (const auto& tag : tags) {
          if (auto text = yaml_.Scalar(tag, "a tag")) {
            rule.tags.push_back(*text);
          }
        }
      }
    } else {
      yaml_.Fail(node, label + " has no 'tags' (the sources it applies to, like [train])");
    }

    if (auto description = node["description"]) {
      if (auto text = yaml_.Scalar(description, "description"); text && !text->empty()) {
        rule.description = *text;
      } else if (text) {
        yaml_.Fail(description, label + ": 'description' is empty");
      }
    } else {
      yaml_.Fail(node, label + " has no 'description'");
    }

    if (std::optional<Cause> cause = CauseField(node, label)) {
      rule.verdict.cause = *cause;
    }
    if (std::optional<Action> action = ActionField(node, label)) {
      rule.verdict.action = *action;
    }
    if (std::optional<Role> role = RoleField(node, label)) {
      rule.role = *role;
    }
    ParseDetector(node, rule, label, yaml_);
    ParseResolves(node, rule, label);
    ParseExamples(node, rule, label);

    if (!rule.id.empty()) {
      auto [it, inserted] = ids_.try_emplace(rule.id, rule.where);
      if (!inserted) {
        yaml_.Fail(node["id"], "duplicate rule id '" + rule.id + "' (first defined at " +
                                   it->second.file + ":" + std::to_string(it->second.line) + ")");
      }
    }
    if (out_.errors.size() == errors_before) {
      out_.rules.push_back(std::move(rule));
    }
  }

  void ParseResolves(const YAML::Node& node, Rule& rule, const std::string& label) {
    const YAML::Node resolves = node["resolves"];
    if (!resolves) {
      return;
    }
    if (!std::holds_alternative<PatternDetector>(rule.detector)) {
      yaml_.Fail(resolves, label +
                               ": 'resolves' goes with a 'pattern' rule (the line that "
                               "ends the failure)");
      return;
    }
    if (node["kind"] && rule.kind != RuleKind::kWarning) {
      yaml_.Fail(node["kind"], label + ": a resolving rule opens nothing: leave 'kind' out");
      return;
    }
    if (auto text = yaml_.Scalar(resolves, "resolves")) {
      if (*text == rule.id) {
        yaml_.Fail(resolves, label + ": a rule cannot resolve itself");
        return;
      }
      rule.resolves = *text;
    }
  }

  void ParseExamples(const YAML::Node& node, Rule& rule, const std::string& label) {
    const YAML::Node examples = node["examples"];
    const bool stacks = std::holds_alternative<StackDetector>(rule.detector);
    if (!rule.MatchesLines() && !stacks) {
      if (examples) {
        yaml_.Fail(
            examples,
            label + ": examples apply to pattern, threshold, metric, spread and stack rules only");
      }
      return;
    }
    if (!examples) {
      yaml_.Fail(node, label + (stacks ? " has no 'examples' ({fires: [...], quiet: [...]}); every "
                                         "stack rule carries a main thread's py-bt it must fire on "
                                         "and one it must stay quiet on"
                                       : " has no 'examples' ({fires: [...], quiet: [...]}); every "
                                         "line rule carries text it must fire on and text it must "
                                         "stay quiet on"));
      return;
    }
    if (!examples.IsMap()) {
      yaml_.Fail(examples, label + ": 'examples' must be a mapping {fires: [...], quiet: [...]}");
      return;
    }
    yaml_.CheckKeys(examples, {"fires", "quiet"}, "examples");
    for (auto [key, list] : {std::pair{"fires", &rule.fires}, std::pair{"quiet", &rule.quiet}}) {
      const YAML::Node items = examples[key];
      if (!items || !items.IsSequence() || items.size() == 0) {
        yaml_.Fail(items ? items : examples,
                   label + ": examples need a non-empty '" + key + "' list");
        continue;
      }
      for (const auto& item : items) {
        if (auto text = yaml_.Scalar(item, std::string("an example in '") + key + "'")) {
          list->push_back({*text, yaml_.Where(item)});
        }
      }
    }
  }

  bool had_errors() const { return out_.errors.size() > errors_at_start_; }

  LoadedRules& out_;
  std::map<std::string, SourceLocation>& ids_;
  config::YamlReader yaml_;
  std::size_t errors_at_start_;
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

void CheckResolvingRules(LoadedRules& out) {
  std::map<std::string, const Rule*, std::less<>> by_id;
  for (const Rule& rule : out.rules) {
    by_id.emplace(rule.id, &rule);
  }
  std::vector<Diagnostic> problems;
  for (const Rule& rule : out.rules) {
    if (rule.resolves.empty()) {
      continue;
    }
    const auto target = by_id.find(rule.resolves);
    std::string problem;
    if (target == by_id.end()) {
      problem = "rule '" + rule.id + "' resolves '" + rule.resolves + "', which no loaded rule is";
    } else if (!target->second->resolves.empty()) {
      problem = "rule '" + rule.id + "' resolves '" + rule.resolves +
                "', itself a resolving rule: it opens no incident to resolve";
    } else if (target->second->kind == RuleKind::kWarning) {
      problem = "rule '" + rule.id + "' resolves '" + rule.resolves +
                "', a warning: warnings open no incident to resolve";
    }
    if (!problem.empty()) {
      Diagnostic diagnostic;
      diagnostic.where = rule.where;
      diagnostic.message = std::move(problem);
      problems.push_back(std::move(diagnostic));
    }
  }
  out.errors.insert(out.errors.end(), problems.begin(), problems.end());
}

void ApplyVerdictOverrides(LoadedRules& out) {
  for (const VerdictOverride& override : out.overrides) {
    bool named = false;
    for (Rule& rule : out.rules) {
      if (::fnmatch(override.rule.c_str(), rule.id.c_str(), 0) == 0) {
        named = true;
        if (override.cause) {
          rule.verdict.cause = *override.cause;
        }
        if (override.action) {
          rule.verdict.action = *override.action;
        }
        if (override.role) {
          rule.role = *override.role;
        }
      }
    }
    if (!named) {
      Diagnostic diagnostic;
      diagnostic.where = override.where;
      diagnostic.message = "verdict for '" + override.rule + "' names no loaded rule";
      out.errors.push_back(std::move(diagnostic));
    }
  }
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
  CheckResolvingRules(out);
  ApplyVerdictOverrides(out);
  return out;
}

}  // namespace trainwatch::rules
