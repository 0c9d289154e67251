#include "rules/source_rules.h"

#include <gtest/gtest.h>

#include "rules/rule_loader.h"

namespace trainwatch::rules {
namespace {

constexpr const char* kRules = R"(rules:
  - id: t.oom
    kind: crash
    tags: [train]
    description: OOM
    pattern: 'out of memory'
    examples: {fires: [out of memory], quiet: [y]}
  - id: t.xid
    kind: device
    tags: [kmsg]
    description: Xid
    pattern: 'NVRM: Xid'
    examples: {fires: ['NVRM: Xid 79'], quiet: [y]}
  - id: t.stall
    kind: hang
    tags: [train]
    description: stall
    progress: {stall_after: 10m}
  - id: t.quiet
    kind: hang
    tags: [train, habana]
    description: silence
    silence: {after: 30m}
  - id: t.exit
    kind: crash
    tags: [train]
    description: exit
    exit: {codes: [137]}
)";

std::vector<std::string> Ids(const std::vector<Rule>& rules) {
  std::vector<std::string> ids;
  ids.reserve(rules.size());
  for (const Rule& rule : rules) {
    ids.push_back(rule.id);
  }
  return ids;
}

TEST(SourceRules, SortsTheRulesOfTheSourcesTagsByDetector) {
  LoadedRules loaded;
  LoadRuleText(kRules, "t.yaml", loaded);
  ASSERT_TRUE(loaded.errors.empty()) << FormatDiagnostic(loaded.errors.front());
  std::vector<Diagnostic> notes;
  Result<SourceRules> train = BuildSourceRules(loaded.rules, {"train"}, "jobs", "", notes);
  ASSERT_TRUE(train.ok()) << train.error().message;
  ASSERT_EQ(train->lines->rules().size(), 1u);
  EXPECT_EQ(train->lines->rules()[0].rule.id, "t.oom");
  EXPECT_EQ(Ids(train->progress), std::vector<std::string>{"t.stall"});
  EXPECT_EQ(Ids(train->silence), std::vector<std::string>{"t.quiet"});
  EXPECT_EQ(Ids(train->exit), std::vector<std::string>{"t.exit"});

  Result<SourceRules> habana = BuildSourceRules(loaded.rules, {"habana", "kmsg"}, "hw", "", notes);
  ASSERT_TRUE(habana.ok());
  ASSERT_EQ(habana->lines->rules().size(), 1u);
  EXPECT_EQ(habana->lines->rules()[0].rule.id, "t.xid");
  EXPECT_TRUE(habana->progress.empty());
  EXPECT_EQ(Ids(habana->silence), std::vector<std::string>{"t.quiet"});
  EXPECT_TRUE(notes.empty());
}

TEST(SourceRules, WarnsOfASilenceShorterThanAStartupGrace) {
  constexpr const char* kGraceRules = R"(rules:
  - id: t.stall
    kind: hang
    tags: [train]
    description: stall
    progress: {stall_after: 10m, startup_grace: 45m}
  - id: t.quiet
    kind: hang
    tags: [train]
    description: silence
    silence: {after: 30m}
  - id: t.long_quiet
    kind: hang
    tags: [train]
    description: silence
    silence: {after: 45m}
)";
  LoadedRules loaded;
  LoadRuleText(kGraceRules, "t.yaml", loaded);
  ASSERT_TRUE(loaded.errors.empty()) << FormatDiagnostic(loaded.errors.front());
  std::vector<Diagnostic> notes;
  Result<SourceRules> train = BuildSourceRules(loaded.rules, {"train"}, "jobs", "", notes);
  ASSERT_TRUE(train.ok()) << train.error().message;
  // A 30-45 minute silent graph compile would be a silence hang the grace meant to forgive.
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].where.line, 7);
  EXPECT_NE(notes[0].message.find("source jobs: silence rule t.quiet fires after 30m, before "
                                  "the 45m startup_grace of progress rule t.stall"),
            std::string::npos)
      << notes[0].message;
  EXPECT_EQ(SilenceWithinGrace(*train, "jobs").size(), 1u);
}

}  // namespace
}  // namespace trainwatch::rules
