#include "rules/rule_loader.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

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
      // YAML 1.1's yes is not a boolean here, and a code is decimal digits: no 0x, no sign.
      {"loose boolean", head + "    exit: {nonzero: yes}\n",
       "pack.yaml:6:21: rule 'demo.x': exit nonzero must be true or false"},
      {"hex exit code", head + "    exit: {codes: [0x10]}\n",
       "pack.yaml:6:20: rule 'demo.x': exit code must be a whole number from 0 to 255"},
      {"signed count", head + "    threshold: {pattern: 'a', count: +5, within: 1m}\n" + examples,
       "pack.yaml:6:38: rule 'demo.x': threshold count must be a whole number from 1 to 1000000"},
      {"zero stall", head + "    progress: {stall_after: 0s}\n" + examples,
       "pack.yaml:6:29: rule 'demo.x': progress stall_after must be more than 0"},
      {"no silence after", head + "    silence: {}\n" + examples,
       "pack.yaml:6:14: rule 'demo.x': silence has no 'after' (e.g. after: 30m)"},
      {"empty tags",
       "rules:\n  - id: demo.x\n    kind: crash\n    tags: []\n"
       "    description: X\n    pattern: 'a'\n" +
           examples,
       "pack.yaml:4:11: rule 'demo.x': tags must be a non-empty list, like [train]"},
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

// A pace rule: kind slow, a ratio above 1, its two windows.
TEST(RuleLoader, APaceRuleIsKindSlowWithARatioAboveOne) {
  const std::string head = "rules:\n  - id: demo.slow\n    tags: [train]\n    description: S\n";
  const LoadedRules good =
      Load(head + "    kind: slow\n    pace: {slower_by: 1.5, for: 2m, baseline: 10m}\n");
  ASSERT_TRUE(good.errors.empty()) << FormatDiagnostic(good.errors.front());
  const auto& pace = std::get<PaceDetector>(good.rules.at(0).detector);
  EXPECT_DOUBLE_EQ(pace.slower_by, 1.5);
  EXPECT_EQ(pace.hold, std::chrono::minutes(2));
  EXPECT_EQ(pace.baseline, std::chrono::minutes(10));
  EXPECT_EQ(good.rules[0].kind, RuleKind::kSlow);
  EXPECT_EQ(
      FirstError(head + "    kind: hang\n    pace: {slower_by: 1.5, for: 2m, baseline: 10m}\n"),
      "pack.yaml:6:11: rule 'demo.slow': a pace rule tells a slowdown: its kind must be "
      "slow");
  EXPECT_NE(FirstError(head + "    kind: slow\n    pace: {slower_by: 1, for: 2m, baseline: 10m}\n")
                .find("pace slower_by must be a number above 1"),
            std::string::npos);
  EXPECT_NE(FirstError(head + "    kind: slow\n    pace: {slower_by: 2, baseline: 10m}\n")
                .find("pace has no 'for' (e.g. for: 2m)"),
            std::string::npos);
}

// A spread rule: kind slow, its regex naming low and high, a ratio above 1.
TEST(RuleLoader, ASpreadRuleNamesItsLowAndHighGroups) {
  const std::string head = "rules:\n  - id: demo.spread\n    tags: [train]\n    description: S\n";
  const std::string examples =
      "    examples: {fires: ['min 1 max 3\\nmin 1 max 3\\n'], quiet: ['min 1 max 1']}\n";
  const LoadedRules good =
      Load(head + "    kind: slow\n    spread: {pattern: 'min (?P<low>\\d+) max (?P<high>\\d+)', " +
           "above: 1.5, for: 2}\n" + examples);
  ASSERT_TRUE(good.errors.empty()) << FormatDiagnostic(good.errors.front());
  const auto& spread = std::get<SpreadDetector>(good.rules.at(0).detector);
  EXPECT_DOUBLE_EQ(spread.above, 1.5);
  EXPECT_EQ(spread.for_reports, 2U);
  EXPECT_TRUE(good.rules[0].MatchesLines());
  EXPECT_EQ(FirstError(head + "    kind: slow\n    spread: {pattern: 'min (\\d+) max (\\d+)', " +
                       "above: 1.5}\n" + examples),
            "pack.yaml:6:23: rule 'demo.spread': spread pattern must name the groups 'low' and "
            "'high' (the fastest and the slowest rank's numbers, e.g. 'Min: (?P<low>[0-9.]+)ms "
            ".* Max: (?P<high>[0-9.]+)ms')");
  EXPECT_EQ(FirstError(head + "    kind: hang\n    spread: {pattern: 'min (?P<low>\\d+) max " +
                       "(?P<high>\\d+)', above: 1.5}\n" + examples),
            "pack.yaml:6:13: rule 'demo.spread': a spread rule tells a straggler: its kind must "
            "be slow");
  EXPECT_NE(FirstError(head + "    kind: slow\n    spread: {pattern: 'min (?P<low>\\d+) max " +
                       "(?P<high>\\d+)', above: 0.5}\n" + examples)
                .find("spread above must be a number above 1"),
            std::string::npos);
  EXPECT_NE(FirstError(head + "    kind: slow\n    spread: {pattern: 'min (?P<low>\\d+) max " +
                       "(?P<high>\\d+)', above: .nan}\n" + examples)
                .find("spread above must be a number above 1"),
            std::string::npos)
      << "NaN compares false both ways";
  EXPECT_NE(FirstError(head + "    kind: slow\n    spread: {pattern: 'min (?P<low>\\d+) max " +
                       "(?P<high>\\d+)', above: 2}\n")
                .find("has no 'examples'"),
            std::string::npos);
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

constexpr const char* kVerdictRules = R"(rules:
  - id: demo.xid
    kind: device
    cause: hardware
    action: exclude_node
    tags: [kmsg]
    description: Xid
    pattern: 'Xid'
    examples: {fires: [Xid], quiet: [ok]}
  - id: demo.nccl.timeout
    kind: crash
    tags: [train]
    description: timeout
    pattern: 'Watchdog caught collective operation timeout'
    examples: {fires: [Watchdog caught collective operation timeout], quiet: [ok]}
  - id: demo.nccl.error
    kind: crash
    cause: application
    action: inspect
    tags: [train]
    description: error
    pattern: 'NCCL error'
    examples: {fires: [NCCL error], quiet: [ok]}
)";

TEST(RuleLoader, ReadsEachRulesCauseAndActionAndDefaultsToUnknownInspect) {
  const LoadedRules loaded = Load(kVerdictRules);
  ASSERT_TRUE(loaded.errors.empty()) << FormatDiagnostic(loaded.errors.front());
  ASSERT_EQ(loaded.rules.size(), 3u);
  EXPECT_EQ(loaded.rules[0].verdict, (Verdict{Cause::kHardware, Action::kExcludeNode}));
  EXPECT_EQ(loaded.rules[1].verdict, (Verdict{Cause::kUnknown, Action::kInspect}));
  EXPECT_EQ(loaded.rules[2].verdict, (Verdict{Cause::kApplication, Action::kInspect}));
}

TEST(RuleLoader, AnUnknownCauseOrActionIsAnErrorAtItsPlace) {
  EXPECT_EQ(FirstError("rules:\n  - id: demo.x\n    kind: crash\n    cause: cosmic_rays\n"
                       "    tags: [train]\n    description: X\n    pattern: 'a'\n"
                       "    examples: {fires: [a], quiet: [b]}\n"),
            "pack.yaml:4:12: rule 'demo.x': unknown cause 'cosmic_rays' (expected hardware, "
            "driver, application, infrastructure, unknown)");
  EXPECT_EQ(FirstError("rules:\n  - id: demo.x\n    kind: crash\n    action: panic\n"
                       "    tags: [train]\n    description: X\n    pattern: 'a'\n"
                       "    examples: {fires: [a], quiet: [b]}\n"),
            "pack.yaml:4:13: rule 'demo.x': unknown action 'panic' (expected retry, "
            "exclude_node, cancel_retries, reboot_node, inspect)");
}

TEST(RuleLoader, ARuleSaysTheRoleItsLinePlaysAndAnOperatorMayChangeIt) {
  namespace fs = std::filesystem;
  const trainwatch::testing::TempDir temp;
  const fs::path& dir = temp.path();
  std::ofstream(dir / "10-shipped.yaml")
      << "rules:\n  - id: demo.peer\n    kind: crash\n    role: consequence\n"
         "    tags: [train]\n    description: X\n    pattern: 'closed by peer'\n"
         "    examples: {fires: [closed by peer], quiet: [b]}\n"
         "  - id: demo.own\n    kind: crash\n    tags: [train]\n    description: Y\n"
         "    pattern: 'boom'\n    examples: {fires: [boom], quiet: [b]}\n";
  LoadedRules loaded = LoadRulePaths({dir.string()});
  ASSERT_TRUE(loaded.errors.empty()) << FormatDiagnostic(loaded.errors.front());
  EXPECT_EQ(loaded.rules[0].role, Role::kConsequence);
  EXPECT_EQ(loaded.rules[1].role, Role::kPrimary) << "the default";
  std::ofstream(dir / "50-site.yaml") << "verdicts:\n  - {rule: demo.peer, role: primary}\n"
                                         "  - {rule: demo.own, role: report}\n";
  loaded = LoadRulePaths({dir.string()});
  ASSERT_TRUE(loaded.errors.empty()) << FormatDiagnostic(loaded.errors.front());
  EXPECT_EQ(loaded.rules[0].role, Role::kPrimary);
  EXPECT_EQ(loaded.rules[1].role, Role::kReport);
  EXPECT_EQ(FirstError("rules:\n  - id: demo.x\n    kind: crash\n    role: victim\n"
                       "    tags: [train]\n    description: X\n    pattern: 'a'\n"
                       "    examples: {fires: [a], quiet: [b]}\n"),
            "pack.yaml:4:11: rule 'demo.x': unknown role 'victim' (expected primary, "
            "consequence, report)");
}

TEST(RuleLoader, AnOperatorsVerdictsOverrideTheShippedOnesInLoadOrder) {
  namespace fs = std::filesystem;
  const trainwatch::testing::TempDir temp;
  const fs::path& dir = temp.path();
  std::ofstream(dir / "10-shipped.yaml") << kVerdictRules;
  // A file of overrides only: a glob, then an exact id that a later entry overrides again.
  std::ofstream(dir / "50-site.yaml") << "verdicts:\n"
                                         "  - rule: 'demo.nccl.*'\n"
                                         "    cause: infrastructure\n"
                                         "    action: retry\n"
                                         "  - rule: demo.nccl.error\n"
                                         "    action: cancel_retries\n";
  std::ofstream(dir / "90-later.yaml") << "verdicts:\n"
                                          "  - {rule: demo.xid, action: reboot_node}\n";
  const LoadedRules loaded = LoadRulePaths({dir.string()});
  ASSERT_TRUE(loaded.errors.empty()) << FormatDiagnostic(loaded.errors.front());
  ASSERT_EQ(loaded.rules.size(), 3u);
  EXPECT_EQ(loaded.rules[0].verdict, (Verdict{Cause::kHardware, Action::kRebootNode}));
  EXPECT_EQ(loaded.rules[1].verdict, (Verdict{Cause::kInfrastructure, Action::kRetry}));
  EXPECT_EQ(loaded.rules[2].verdict, (Verdict{Cause::kInfrastructure, Action::kCancelRetries}));
}

TEST(RuleLoader, AVerdictThatNamesNoRuleOrSetsNothingIsAnError) {
  namespace fs = std::filesystem;
  const trainwatch::testing::TempDir temp;
  const fs::path& dir = temp.path();
  std::ofstream(dir / "a.yaml") << kVerdictRules;
  std::ofstream(dir / "b.yaml") << "verdicts:\n"
                                   "  - {rule: 'demo.nvidia.*', cause: hardware}\n"
                                   "  - {rule: demo.xid}\n"
                                   "  - {cause: driver}\n";
  const LoadedRules loaded = LoadRulePaths({dir.string()});
  ASSERT_EQ(loaded.errors.size(), 3u);
  const std::string b = (dir / "b.yaml").string();
  EXPECT_EQ(FormatDiagnostic(loaded.errors[0]),
            b + ":3:5: verdict for 'demo.xid' sets none of 'cause', 'action' and 'role'");
  EXPECT_EQ(FormatDiagnostic(loaded.errors[1]),
            b + ":4:5: a verdict has no 'rule' (a rule id, or a glob like 'nvidia.xid.*')");
  EXPECT_EQ(FormatDiagnostic(loaded.errors[2]),
            b + ":2:5: verdict for 'demo.nvidia.*' names no loaded rule");
}

TEST(RuleLoader, AProgressRuleMayLearnItsThresholdWithAFloorAndTheCap) {
  const std::string head =
      "rules:\n  - id: demo.stall\n    kind: hang\n    tags: [train]\n"
      "    description: Stall\n";
  const LoadedRules loaded =
      Load(head + "    progress: {stall_after: 10m, startup_grace: 45m, factor: 10, min: 1m}\n");
  ASSERT_TRUE(loaded.errors.empty()) << FormatDiagnostic(loaded.errors.front());
  const auto& progress = std::get<ProgressDetector>(loaded.rules[0].detector);
  EXPECT_EQ(progress.factor, 10);
  EXPECT_EQ(progress.min, Duration(std::chrono::minutes(1)));
  EXPECT_EQ(FirstError(head + "    progress: {stall_after: 10m, factor: 10}\n"),
            "pack.yaml:6:15: rule 'demo.stall': progress with 'factor' needs 'min' (the floor, "
            "e.g. min: 1m)");
  EXPECT_EQ(FirstError(head + "    progress: {stall_after: 10m, factor: 0.5, min: 1m}\n"),
            "pack.yaml:6:42: rule 'demo.stall': progress factor must be a number from 1 to "
            "1000 (times the recent p99 interval between advances)");
  EXPECT_EQ(FirstError(head + "    progress: {stall_after: 10m, factor: 10, min: 20m}\n"),
            "pack.yaml:6:51: rule 'demo.stall': progress min is above stall_after (the cap)");
  EXPECT_EQ(FirstError(head + "    progress: {stall_after: 10m, min: 1m}\n"),
            "pack.yaml:6:39: rule 'demo.stall': progress 'min' goes with 'factor' (e.g. factor: "
            "10, min: 1m)");
}

TEST(RuleLoader, EveryShippedRuleStatesItsCauseAndAction) {
  // The default (unknown, inspect) is for operators' rules; a shipped rule says what it means.
  namespace fs = std::filesystem;
  std::size_t rules = 0;
  for (const auto& entry : fs::directory_iterator(TRAINWATCH_TEST_RULES_DIR)) {
    if (entry.path().extension() != ".yaml") {
      continue;
    }
    const YAML::Node root = YAML::LoadFile(entry.path().string());
    for (const YAML::Node& rule : root["rules"]) {
      ++rules;
      if (rule["resolves"]) {
        continue;  // it opens nothing: no verdict of its own
      }
      EXPECT_TRUE(rule["cause"] && rule["action"])
          << entry.path().filename().string() << ": " << rule["id"].as<std::string>();
    }
  }
  EXPECT_GT(rules, 80u);
  const LoadedRules shipped = LoadRulePaths({TRAINWATCH_TEST_RULES_DIR});
  EXPECT_TRUE(shipped.errors.empty()) << FormatDiagnostic(shipped.errors.front());
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

constexpr const char* kNfsRules = R"(rules:
  - id: storage.nfs_down
    kind: hang
    tags: [kmsg]
    description: The server is away
    pattern: 'nfs: server (\S+) not responding'
    examples: {fires: ['nfs: server a not responding'], quiet: ['nfs: server a OK']}
  - id: storage.nfs_back
    resolves: storage.nfs_down
    tags: [kmsg]
    description: The server is back
    pattern: 'nfs: server (\S+) OK'
    examples: {fires: ['nfs: server a OK'], quiet: ['nfs: server a not responding']}
)";

TEST(RuleLoader, AResolvingRuleNamesTheRuleWhoseIncidentsItsLinesEnd) {
  LoadedRules loaded = Load(kNfsRules);
  CheckResolvingRules(loaded);
  ASSERT_TRUE(loaded.errors.empty()) << FormatDiagnostic(loaded.errors.front());
  ASSERT_EQ(loaded.rules.size(), 2U);
  EXPECT_EQ(loaded.rules[0].resolves, "");
  EXPECT_EQ(loaded.rules[1].resolves, "storage.nfs_down");
  EXPECT_EQ(loaded.rules[1].kind, RuleKind::kWarning) << "its kind may be left out";
}

TEST(RuleLoader, AResolvingRuleMustBeAPatternAndNameARuleThatOpensIncidents) {
  EXPECT_EQ(FirstError("rules:\n  - id: a.b\n    resolves: c.d\n    tags: [t]\n"
                       "    description: x\n    silence: {after: 5m}\n"),
            "pack.yaml:3:15: rule 'a.b': 'resolves' goes with a 'pattern' rule (the line that "
            "ends the failure)");
  auto errors_of = [](std::string text) {
    LoadedRules loaded = Load(text);
    CheckResolvingRules(loaded);
    return loaded.errors.empty() ? std::string() : FormatDiagnostic(loaded.errors.front());
  };
  std::string unknown = kNfsRules;
  unknown.replace(unknown.find("resolves: storage.nfs_down"), 26, "resolves: storage.nfs_gone");
  EXPECT_EQ(errors_of(unknown),
            "pack.yaml:8:5: rule 'storage.nfs_back' resolves 'storage.nfs_gone', which no loaded "
            "rule is");
  std::string with_kind = kNfsRules;
  with_kind.insert(with_kind.find("    resolves: storage.nfs_down"), "    kind: crash\n");
  EXPECT_EQ(errors_of(with_kind),
            "pack.yaml:9:11: rule 'storage.nfs_back': a resolving rule opens nothing: leave 'kind' "
            "out");
  std::string warning = kNfsRules;
  warning.replace(warning.find("kind: hang"), 10, "kind: warning");
  EXPECT_EQ(errors_of(warning),
            "pack.yaml:8:5: rule 'storage.nfs_back' resolves 'storage.nfs_down', a warning: "
            "warnings open no incident to resolve");
}

}  // namespace
}  // namespace trainwatch::rules
