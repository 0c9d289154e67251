#include "rules/line_matcher.h"

#include <gtest/gtest.h>

#include "rules/rule_loader.h"
#include "support/framing.h"

namespace trainwatch::rules {
namespace {

std::vector<Rule> RulesFrom(const std::string& body) {
  LoadedRules loaded;
  LoadRuleText("rules:\n" + body, "test.yaml", loaded);
  EXPECT_TRUE(loaded.errors.empty()) << FormatDiagnostic(loaded.errors.front());
  return loaded.rules;
}

std::string PatternRule(const std::string& id, const std::string& pattern,
                        const std::string& extra = "", const std::string& tags = "[train]") {
  return "  - id: " + id + "\n    kind: crash\n    tags: " + tags +
         "\n    description: D\n    pattern: '" + pattern + "'\n" + extra +
         "    examples: {fires: [x], quiet: [y]}\n";
}

struct Hit {
  std::string rule;
  std::uint64_t line;
  std::string segment;
  bool operator==(const Hit&) const = default;
};
std::ostream& operator<<(std::ostream& os, const Hit& h) {
  return os << "{" << h.rule << ", " << h.line << ", \"" << h.segment << "\"}";
}

std::vector<Hit> MatchAll(const std::vector<Rule>& rules, const std::string& text,
                          const std::string& tag = "train",
                          std::vector<Diagnostic>* notes = nullptr) {
  auto compiled = CompiledRules::Build(rules, {tag}, notes);
  EXPECT_TRUE(compiled.ok());
  auto matcher = LineMatcher::Create(*compiled);
  EXPECT_TRUE(matcher.ok());
  std::vector<Hit> hits;
  std::vector<SegmentMatch> matches;
  testing::ForEachBatch(text, [&](const source::LineBatch& batch) {
    matches.clear();
    matcher->Match(batch, matches);
    for (const auto& m : matches) {
      hits.push_back({(*compiled)->rules()[m.rule].rule.id, batch.LineNumber(m.record),
                      std::string(m.segment)});
    }
  });
  return hits;
}

TEST(LineMatcher, OnePassFindsEveryRuleInLineOrder) {
  const auto rules = RulesFrom(PatternRule("t.oom", "out of memory") +
                               PatternRule("t.nccl", "NCCL error") + PatternRule("t.any", "error"));
  const auto hits = MatchAll(rules, "ok\nCUDA out of memory\nfine\nNCCL error in: x\n");
  EXPECT_EQ(hits, (std::vector<Hit>{{"t.oom", 2, "CUDA out of memory"},
                                    {"t.nccl", 4, "NCCL error in: x"},
                                    {"t.any", 4, "NCCL error in: x"}}));
}

TEST(LineMatcher, AnchorsApplyToEachProgressSegment) {
  const auto rules = RulesFrom(PatternRule("t.killed", "^Killed$"));
  const auto hits = MatchAll(rules, "\r 50%|#####|\rKilled\nnot Killed\n");
  EXPECT_EQ(hits, (std::vector<Hit>{{"t.killed", 1, "Killed"}}));
}

TEST(LineMatcher, UnlessSuppressesAMatch) {
  const auto rules = RulesFrom(PatternRule("t.cuda", "CUDA error: ", "    unless: 'no error'\n"));
  const auto hits = MatchAll(rules, "CUDA error: no error\nCUDA error: illegal address\n");
  EXPECT_EQ(hits, (std::vector<Hit>{{"t.cuda", 2, "CUDA error: illegal address"}}));
}

TEST(LineMatcher, OnlyRulesOfTheSourceTagApply) {
  const auto rules =
      RulesFrom(PatternRule("t.kernel", "Xid", "", "[kmsg]") + PatternRule("t.train", "Xid"));
  EXPECT_EQ(MatchAll(rules, "NVRM: Xid 79\n", "kmsg"),
            (std::vector<Hit>{{"t.kernel", 1, "NVRM: Xid 79"}}));
  EXPECT_EQ(MatchAll(rules, "NVRM: Xid 79\n", "train"),
            (std::vector<Hit>{{"t.train", 1, "NVRM: Xid 79"}}));
}

TEST(LineMatcher, ASourceWithSeveralTagsGetsTheRulesOfEach) {
  const auto rules =
      RulesFrom(PatternRule("t.kernel", "Xid", "", "[kmsg]") + PatternRule("t.train", "Xid") +
                PatternRule("t.habana", "Xid", "", "[habana]"));
  auto compiled = CompiledRules::Build(rules, {"kmsg", "train"}, nullptr);
  ASSERT_TRUE(compiled.ok());
  ASSERT_EQ((*compiled)->rules().size(), 2u);
  EXPECT_EQ((*compiled)->rules()[0].rule.id, "t.kernel");
  EXPECT_EQ((*compiled)->rules()[1].rule.id, "t.train");
}

TEST(LineMatcher, ReportsOneMatchPerRuleAndSegment) {
  const auto rules = RulesFrom(PatternRule("t.err", "err\\w*"));
  EXPECT_EQ(MatchAll(rules, "err err errors\n").size(), 1u);
}

TEST(LineMatcher, PatternTheFastMatcherRefusesStillWorksAndIsReported) {
  const auto rules =
      RulesFrom(PatternRule("t.ungreedy", "(?U)fail.+ed") + PatternRule("t.fast", "boom"));
  std::vector<Diagnostic> notes;
  const auto hits = MatchAll(rules, "boom\nfail: it stopped\nquiet\n", "train", &notes);
  EXPECT_EQ(hits, (std::vector<Hit>{{"t.fast", 1, "boom"}, {"t.ungreedy", 2, "fail: it stopped"}}));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].message.find("t.ungreedy"), std::string::npos);
  EXPECT_EQ(notes[0].where.line, 6);
}

// The red team's word list: 50,000 literals in one alternation. Hyperscan refuses it, and on
// RE2 alone it scanned at 9 s per 100 MB: refused at load, naming the file and line.
TEST(LineMatcher, AHugeAlternationTheFastMatcherRefusesIsAnErrorAtItsLine) {
  std::string words;
  for (int i = 0; i < 50000; ++i) {
    words += (i == 0 ? "" : "|");
    words += "word" + std::to_string(i);
  }
  const auto rules = RulesFrom(PatternRule("t.words", "(?i)(" + words + ")"));
  auto compiled = CompiledRules::Build(rules, {"train"}, nullptr);
  ASSERT_FALSE(compiled.ok());
  EXPECT_NE(compiled.error().message.find(":6:"), std::string::npos) << compiled.error().message;
  EXPECT_NE(compiled.error().message.find("rule 't.words'"), std::string::npos);
  EXPECT_NE(compiled.error().message.find("too large for the fast matcher"), std::string::npos);
}

TEST(LineMatcher, PathologicalPatternStaysLinear) {
  // (a+)+$ takes exponential time in a backtracking engine on "aaaa...ab"; RE2 and
  // Vectorscan are linear, so this finishes at once (a hang here fails the test by timeout).
  const auto rules = RulesFrom(PatternRule("t.evil", "(a+)+$"));
  const std::string line = std::string(50000, 'a') + "b\n";
  EXPECT_TRUE(MatchAll(rules, line).empty());
  EXPECT_EQ(MatchAll(rules, std::string(50000, 'a') + "\n").size(), 1u);
}

TEST(LineMatcher, SegmentAnchorsMeanTheSameToBothEngines) {
  // RE2 judges one segment: \A and \z are its start and end, as ^ and $ are.
  const auto rules = RulesFrom(PatternRule("t.start", "\\AFOO") + PatternRule("t.end", "BAR\\z"));
  EXPECT_EQ(MatchAll(rules, "zzz\nFOO\nxBAR\n 10%\rBAR\n"),
            (std::vector<Hit>{{"t.start", 2, "FOO"}, {"t.end", 3, "xBAR"}, {"t.end", 4, "BAR"}}));
}

TEST(LineMatcher, QuotedTextAndFlagGroupsKeepTheirMeaning) {
  const auto rules = RulesFrom(PatternRule("t.quoted", "NCCL \\Qerror\\A\\E") +
                               PatternRule("t.flags", "(?si)caf\\xE9 failure"));
  std::vector<Diagnostic> notes;
  EXPECT_EQ(
      MatchAll(rules, "NCCL error\\A\nCAF\xc9 FAILURE\n", "train", &notes),
      (std::vector<Hit>{{"t.quoted", 1, "NCCL error\\A"}, {"t.flags", 2, "CAF\xc9 FAILURE"}}));
  EXPECT_EQ(notes.size(), 1u);  // the case-folded one runs on RE2 alone
}

TEST(LineMatcher, CaseInsensitiveNonAsciiIsLeftToRe2) {
  // Written as a raw byte and as an escape.
  const auto rules =
      RulesFrom(PatternRule("t.raw", "(?i)caf\xe9") + PatternRule("t.escaped", "(?i)caf\\xe9"));
  std::vector<Diagnostic> notes;
  EXPECT_EQ(MatchAll(rules, "CAF\xc9\n", "train", &notes).size(), 2u);
  EXPECT_EQ(notes.size(), 2u);
}

TEST(LineMatcher, PatternsThatEndEverywhereGiveOneMatchPerSegment) {
  // 'MODULE:\w+' can end at every byte of a long word; the matcher must still report (and
  // pay for) one match per segment, not one per byte.
  const auto rules = RulesFrom(PatternRule("t.word", "MODULE:\\w+"));
  std::string text;
  for (int i = 0; i < 20; ++i) {
    text += "FATAL ERROR :: MODULE:" + std::string(30000, 'a') + "\r" +
            "MODULE:" + std::string(100, 'b') + "\n";
  }
  const auto hits = MatchAll(rules, text);
  ASSERT_EQ(hits.size(), 40u);  // two segments per line
  EXPECT_EQ(hits[1].line, 1u);
  EXPECT_EQ(hits[1].segment, "MODULE:" + std::string(100, 'b'));
}

TEST(LineMatcher, MatchesBinaryLinesAsBytes) {
  const auto rules = RulesFrom(PatternRule("t.boom", "boom"));
  const std::string text("\0\xff boom \xfe\0\n", 11);
  EXPECT_EQ(MatchAll(rules, text).size(), 1u);
}

}  // namespace
}  // namespace trainwatch::rules
