// A site's stack rules: loaded from a rule file (kind hang only, examples required and checked
// as py-bt), tried by JudgeStacks before its built-in verdicts.
#include "diagnose/stack_rules.h"

#include <gtest/gtest.h>

#include "diagnose/stack_verdict.h"
#include "rules/rule_loader.h"

namespace trainwatch::diagnose {
namespace {

using collect::StackFrame;

constexpr const char* kRules = R"(rules:
  - id: site.checkpoint_read
    kind: hang
    cause: infrastructure
    action: retry
    tags: [train]
    description: A rank stuck reading a checkpoint from the shared store
    stack:
      function: '^(load|read_shard)$'
      file: 'checkpoint\.py$'
      says: '{rank} is stuck reading a checkpoint in {function} at {file}:{line}'
    examples:
      fires: ["Traceback (most recent call first):\n  File \"/job/checkpoint.py\", line 12, in load\n  File \"/job/train.py\", line 5, in <module>\n"]
      quiet: ["  File \"/job/train.py\", line 12, in load\n"]
)";

rules::LoadedRules Load(const std::string& text) {
  rules::LoadedRules out;
  rules::LoadRuleText(text, "site.yaml", out);
  return out;
}

std::string Errors(const std::string& text) {
  std::string all;
  for (const Diagnostic& error : Load(text).errors) {
    all += FormatDiagnostic(error) + "\n";
  }
  return all;
}

TEST(StackRules, LoadFromARuleFileAndTheirExamplesPass) {
  const rules::LoadedRules loaded = Load(kRules);
  ASSERT_TRUE(loaded.errors.empty()) << Errors(kRules);
  ASSERT_EQ(loaded.rules.size(), 1u);
  const auto* stack = std::get_if<rules::StackDetector>(&loaded.rules[0].detector);
  ASSERT_NE(stack, nullptr);
  EXPECT_EQ(stack->function.regex, "^(load|read_shard)$");
  EXPECT_FALSE(loaded.rules[0].MatchesLines()) << "no line ever fires it";
  std::vector<Diagnostic> problems;
  CheckStackExamples(loaded.rules, problems);
  EXPECT_TRUE(problems.empty()) << problems.front().message;
}

TEST(StackRules, AWrongExampleAKindOtherThanHangAndAMissingSentenceAreSaid) {
  std::string swapped = kRules;
  swapped.replace(swapped.find("fires:"), 6, "quiet:");
  swapped.replace(swapped.rfind("quiet:"), 6, "fires:");
  std::vector<Diagnostic> problems;
  CheckStackExamples(Load(swapped).rules, problems);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].message,
            "rule 'site.checkpoint_read': example stack should fire but does not");
  EXPECT_EQ(problems[0].where.file, "site.yaml");
  EXPECT_GT(problems[0].where.line, 0);

  std::string crash = kRules;
  crash.replace(crash.find("kind: hang"), 10, "kind: crash");
  EXPECT_NE(Errors(crash).find("a stack rule judges a hang's stacks: its kind must be hang"),
            std::string::npos)
      << Errors(crash);
  std::string mute = kRules;
  mute.erase(mute.find("      says:"), mute.find("    examples:") - mute.find("      says:"));
  EXPECT_NE(Errors(mute).find("stack has no 'says'"), std::string::npos) << Errors(mute);
  std::string untested = kRules;
  untested.erase(untested.find("    examples:"));
  EXPECT_NE(Errors(untested).find("every stack rule carries a main thread's py-bt"),
            std::string::npos)
      << Errors(untested);
}

TEST(StackRules, ASitesRuleDecidesBeforeTheBuiltInVerdictsAndNamesEveryRankItMatches) {
  const rules::LoadedRules loaded = Load(kRules);
  const std::shared_ptr<const StackRules> site = CompileStackRules(loaded.rules);
  ASSERT_EQ(site->size(), 1u);
  auto rank = [](int n, std::vector<StackFrame> python) {
    RankState state;
    state.label = "rank " + std::to_string(n);
    state.rank = n;
    state.pid = 100 + n;
    state.python = std::move(python);
    return state;
  };
  const std::vector<StackFrame> reading = {
      {"read", "", 0}, {"read_shard", "/job/checkpoint.py", 41}, {"main", "/job/train.py", 9}};
  const std::vector<StackFrame> all_reduce = {
      {"all_reduce", "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", 1541},
      {"main", "/job/train.py", 12}};
  const std::vector<RankState> ranks = {rank(0, all_reduce), rank(1, reading), rank(2, all_reduce),
                                        rank(3, reading)};
  JobShape shape;
  shape.world_size = 4;
  shape.all_local = true;
  const std::optional<StackVerdict> verdict = JudgeStacks(ranks, shape, site.get());
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->kind, "site.checkpoint_read");
  EXPECT_EQ(verdict->verdict.cause, rules::Cause::kInfrastructure);
  EXPECT_EQ(verdict->verdict.action, rules::Action::kRetry);
  EXPECT_EQ(verdict->says,
            "rank 1 is stuck reading a checkpoint in read_shard at checkpoint.py:41");
  EXPECT_EQ(verdict->culprits, (std::vector<std::string>{"rank 1", "rank 3"}));
  // Without the site's rule, the built-in verdicts judge the same stacks.
  const std::optional<StackVerdict> builtin = JudgeStacks(ranks, shape);
  EXPECT_TRUE(!builtin || builtin->kind != "site.checkpoint_read");
}

}  // namespace
}  // namespace trainwatch::diagnose
