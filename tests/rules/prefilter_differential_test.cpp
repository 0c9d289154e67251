// The fast path must never lose a match: for every shipped rule, the matcher (Vectorscan
// prefilter + RE2 confirm) must report exactly the segments plain RE2 matches, on batches
// that mix the rules' own examples with varied filler, indentation, glued text and progress
// updates.
// This caught a real bug: Vectorscan 5.4.9 on an AVX-512 machine dropped '^\s*Killed$' after
// any line of 18 bytes or more when compiled with the other shipped patterns.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <sstream>

#include "rules/line_matcher.h"
#include "rules/rule_loader.h"
#include "support/framing.h"

namespace trainwatch::rules {
namespace {

using Hit = std::tuple<std::string, std::uint64_t, std::string>;  // rule, line, segment

std::vector<std::string> ExampleLines(const std::vector<Rule>& rules) {
  std::vector<std::string> lines;
  for (const Rule& rule : rules) {
    for (const auto* examples : {&rule.fires, &rule.quiet}) {
      for (const Example& example : *examples) {
        std::istringstream in(example.text);
        std::string line;
        while (std::getline(in, line)) {
          lines.push_back(line);
        }
      }
    }
  }
  return lines;
}

std::string Filler(std::mt19937& random) {
  static const std::string kAlphabet =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 "
      "     []:|%/.,-_=()<>#\t";
  std::string text(random() % 200, ' ');
  for (char& c : text) {
    c = kAlphabet[random() % kAlphabet.size()];
  }
  return text;
}

// A log made of example lines, filler, and both glued together, some as '\r' updates.
std::string RandomLog(const std::vector<std::string>& examples, std::mt19937& random) {
  std::string log;
  for (int i = 0; i < 400; ++i) {
    const std::string& example = examples[random() % examples.size()];
    switch (random() % 7) {
      case 0:
      case 1:
        log += Filler(random);
        break;
      case 2:
        log += example;
        break;
      case 3:
        log += Filler(random) + example;
        break;
      case 4:
        log += "\r" + Filler(random) + "\r" + example;
        break;
      case 5:
        // Indented, as CANN errors and shell messages are: the Vectorscan bug needed this.
        log += std::string(1 + random() % 8, random() % 2 ? ' ' : '\t') + example;
        break;
      default:
        log += example + Filler(random);
        break;
    }
    log += '\n';
  }
  return log;
}

TEST(PrefilterDifferential, ShippedRulesAgreeWithPlainRe2) {
  const LoadedRules loaded = LoadRulePaths({TRAINWATCH_TEST_RULES_DIR});
  ASSERT_TRUE(loaded.errors.empty());
  const std::vector<std::string> examples = ExampleLines(loaded.rules);
  std::set<std::string> tags;
  for (const Rule& rule : loaded.rules) {
    tags.insert(rule.tags.begin(), rule.tags.end());
  }
  std::mt19937 random(20261121);
  for (const std::string& tag : tags) {
    auto compiled = CompiledRules::Build(loaded.rules, {tag}, nullptr);
    ASSERT_TRUE(compiled.ok());
    auto matcher = LineMatcher::Create(*compiled);
    ASSERT_TRUE(matcher.ok());
    for (int round = 0; round < 20; ++round) {
      const std::string log = RandomLog(examples, random);
      std::set<Hit> fast;
      std::set<Hit> plain;
      std::vector<SegmentMatch> matches;
      testing::ForEachBatch(log, [&](const source::LineBatch& batch) {
        matches.clear();
        matcher->Match(batch, matches);
        for (const auto& m : matches) {
          fast.emplace((*compiled)->rules()[m.rule].rule.id, batch.LineNumber(m.record),
                       std::string(m.segment));
        }
        for (std::size_t record = 0; record < batch.size(); ++record) {
          std::istringstream segments{std::string(batch.Record(record))};
          std::string segment;
          while (std::getline(segments, segment)) {
            for (const LineRule& rule : (*compiled)->rules()) {
              if (!segment.empty() && RE2::PartialMatch(segment, *rule.match) &&
                  (rule.unless == nullptr || rule.multiline ||
                   !RE2::PartialMatch(segment, *rule.unless))) {
                plain.emplace(rule.rule.id, batch.LineNumber(record), segment);
              }
            }
          }
        }
      });
      for (const Hit& hit : plain) {
        EXPECT_TRUE(fast.contains(hit))
            << "tag " << tag << ": the matcher missed rule " << std::get<0>(hit) << " on line "
            << std::get<1>(hit) << ": \"" << std::get<2>(hit) << "\"";
      }
      for (const Hit& hit : fast) {
        EXPECT_TRUE(plain.contains(hit)) << "tag " << tag << ": the matcher invented rule "
                                         << std::get<0>(hit) << " on line " << std::get<1>(hit);
      }
    }
  }
}

}  // namespace
}  // namespace trainwatch::rules
