#include "rules/rule_loader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/temp_dir.h"

namespace trainwatch::rules {
namespace {

LoadedRules Load(const std::string& text) {
  LoadedRules out;
  LoadRuleText(text, "pack.yaml", out);
  return out;
}

// The first diagnostic, formatted as the operator sees it.
std::string FirstError(const std::string& text) {
  const LoadedRules loaded = Load(text);
  return loaded.errors.empty() ? "" : FormatDiagnostic(loaded.errors.front());
}

constexpr const char* kGood = R"(rules:
  - id: demo.boom
    kind: crash
    tags: [train]
    description: Boom
    pattern: 'boom \d+'
    unless: 'boom 0'
    examples: {fires: ["boom 7"], quiet: ["boom 0"]}
  - id: demo.many
    kind: warning
    tags: [train, kmsg]
    description: Many
    threshold: {pattern: 'retry', count: 3, within: 5m}
    examples: {fires: ["retry"], quiet: ["ok"]}
  - id: demo.stall
    kind: hang
    tags: [train]
    description: Stall
    progress: {stall_after: 10m, startup_grace: 45m}
  - id: demo.quiet
    kind: hang
    tags: [train]
    description: Quiet
    silence: {after: 30m}
  - id: demo.exit
    kind: crash
    tags: [train]
    description: Exit
    exit: {signals: [SIGKILL], codes: [137]}
)";

TEST(RuleLoader, LoadsEveryDetectorKind) {
  const LoadedRules loaded = Load(kGood);
  ASSERT_TRUE(loaded.errors.empty()) << FormatDiagnostic(loaded.errors.front());
  ASSERT_EQ(loaded.rules.size(), 5u);
  const auto& boom = std::get<PatternDetector>(loaded.rules[0].detector);
  EXPECT_EQ(boom.match.regex, "boom \\d+");
  EXPECT_EQ(boom.match.where.line, 6);
  ASSERT_TRUE(boom.unless.has_value());
  const auto& many = std::get<ThresholdDetector>(loaded.rules[1].detector);
  EXPECT_EQ(many.count, 3u);
  EXPECT_EQ(many.within, std::chrono::minutes(5));
  EXPECT_EQ(std::get<ProgressDetector>(loaded.rules[2].detector).startup_grace,
            std::chrono::minutes(45));
  EXPECT_EQ(std::get<SilenceDetector>(loaded.rules[3].detector).after, std::chrono::minutes(30));
  EXPECT_EQ(std::get<ExitDetector>(loaded.rules[4].detector).codes, std::vector<int>{137});
  EXPECT_EQ(loaded.rules[0].where.line, 2);
}

TEST(RuleLoader, ReportsEachProblemWithFileLineAndColumn) {
  struct Case {
    const char* name;
    std::string text;
    std::string expected;  // the formatted first error starts with this
  };
  const std::string head =
      "rules:\n  - id: demo.x\n    kind: crash\n    tags: [train]\n"
      "    description: X\n";
  const std::string examples = "    examples: {fires: [a], quiet: [b]}\n";
  const std::vector<Case> cases = {
      {"malformed yaml", "rules: [\n  - id: x\n", "pack.yaml:"},
      {"unknown key", head + "    patern: 'a'\n    pattern: 'a'\n" + examples,
       "pack.yaml:6:5: unknown key 'patern' in a rule"},
      {"invalid regex", head + "    pattern: 'a(b'\n" + examples,
       "pack.yaml:6:14: pattern is not a valid RE2 regex: missing ): a(b"},
      {"backreference", head + "    pattern: '(a)\\1'\n" + examples,
       "pack.yaml:6:14: pattern is not a valid RE2 regex"},
      {"empty match", head + "    pattern: 'a*'\n" + examples,
       "pack.yaml:6:14: pattern 'a*' matches the empty string"},
      {"no detector", head + examples, "pack.yaml:2:5: rule 'demo.x' has no detector"},
      {"two detectors", head + "    pattern: 'a'\n    silence: {after: 5m}\n" + examples,
       "pack.yaml:7:14: rule 'demo.x' has more than one detector"},
      {"bad kind",
       "rules:\n  - id: demo.x\n    kind: boom\n    tags: [train]\n"
       "    description: X\n    pattern: 'a'\n" +
           examples,
       "pack.yaml:3:11: rule 'demo.x': unknown kind 'boom'"},
      {"bad id",
       "rules:\n  - id: Demo X\n    kind: crash\n    tags: [train]\n"
       "    description: X\n    pattern: 'a'\n" +
           examples,
       "pack.yaml:2:9: id 'Demo X' must be dotted lowercase words"},
      {"no examples", head + "    pattern: 'a'\n",
       "pack.yaml:2:5: rule 'demo.x' has no 'examples'"},
      {"bare duration", head + "    silence: {after: 30}\n",
       "pack.yaml:6:22: silence after: duration '30' needs a unit"},
      {"bad signal", head + "    exit: {signals: [SIGNOPE]}\n",
       "pack.yaml:6:22: rule 'demo.x': unknown signal 'SIGNOPE'"},
      {"empty file", "", "pack.yaml:1: empty rule file"},
      {"second document", head + "    pattern: 'a'\n" + examples + "---\n" + head,
       "pack.yaml:9:1: a file holds one YAML document"},
      {"second rules key", head + "    pattern: 'a'\n" + examples + "rules: []\n",
       "pack.yaml:8:1: key 'rules' appears twice in the file"},
      {"empty value", head + "    pattern:\n" + examples, "pack.yaml:6:5: pattern has no value"},
      {"not a list", "rules: 3\n", "pack.yaml:1:8: 'rules' must be a list"},
  };
  for (const Case& c : cases) {
    const std::string error = FirstError(c.text);
    EXPECT_TRUE(error.starts_with(c.expected))
        << c.name << "\n  got:      " << error << "\n  expected: " << c.expected;
  }
}

TEST(RuleLoader, TrailingDocumentSeparatorIsFine) {
  const LoadedRules loaded = Load(std::string(kGood) + "---\n# nothing after this\n");
  EXPECT_TRUE(loaded.errors.empty()) << FormatDiagnostic(loaded.errors.front());
  EXPECT_EQ(loaded.rules.size(), 5u);
}

TEST(RuleLoader, ReportsAllProblemsNotJustTheFirst) {
  const LoadedRules loaded = Load(
      "rules:\n"
      "  - id: demo.a\n    kind: nope\n    tags: [train]\n    description: A\n"
      "    pattern: 'a('\n    examples: {fires: [a], quiet: [b]}\n"
      "  - id: demo.b\n    kind: crash\n    tags: []\n    description: B\n"
      "    pattern: 'b'\n    examples: {fires: [b], quiet: [c]}\n");
  EXPECT_EQ(loaded.errors.size(), 3u);
  EXPECT_TRUE(loaded.rules.empty());
}

TEST(RuleLoader, RefusesDuplicateIdsAcrossFiles) {
  namespace fs = std::filesystem;
  const trainwatch::testing::TempDir temp;
  const fs::path& dir = temp.path();
  const std::string rule =
      "rules:\n  - id: demo.same\n    kind: crash\n    tags: [train]\n"
      "    description: X\n    pattern: 'a'\n"
      "    examples: {fires: [a], quiet: [b]}\n";
  std::ofstream(dir / "a.yaml") << rule;
  std::ofstream(dir / "b.yml") << rule;
  std::ofstream(dir / "notes.txt") << "not a rule file";
  const LoadedRules loaded = LoadRulePaths({dir.string()});
  ASSERT_EQ(loaded.errors.size(), 1u);
  EXPECT_NE(loaded.errors[0].message.find("duplicate rule id 'demo.same'"), std::string::npos);
  EXPECT_EQ(loaded.errors[0].where.file, (dir / "b.yml").string());
  EXPECT_EQ(loaded.files.size(), 2u);
}

TEST(RuleLoader, MissingPathsAndDirectoriesWithoutRulesAreErrors) {
  const LoadedRules missing = LoadRulePaths({"/nonexistent/rules.yaml"});
  ASSERT_EQ(missing.errors.size(), 1u);
  EXPECT_EQ(FormatDiagnostic(missing.errors[0]),
            "/nonexistent/rules.yaml: no such rule file or directory");
  const LoadedRules empty_dir = LoadRulePaths({"/proc/self/fdinfo"});
  ASSERT_EQ(empty_dir.errors.size(), 1u);
}

TEST(RuleLoader, BinaryGarbageIsAnErrorNotACrash) {
  std::string garbage;
  for (int i = 0; i < 4096; ++i) {
    garbage += static_cast<char>((i * 7919) % 256);
  }
  const LoadedRules loaded = Load(garbage);
  EXPECT_FALSE(loaded.errors.empty());
}

}  // namespace
}  // namespace trainwatch::rules
