// The fast path must never lose a match. For every shipped rule, the matcher (Vectorscan
// prefilter + RE2 confirm) must report exactly the segments plain RE2 matches, on batches
// that mix the rules' own examples with varied filler, indentation, glued text and progress
// updates. The redactor, on the same engine (core/multi_regex.h), must redact exactly what it
// redacts with RE2 alone, on texts of secret-like strings, near misses and raw bytes.
// This caught a real bug: Vectorscan 5.4.9 on an AVX-512 machine dropped '^\s*Killed$' after
// any line of 18 bytes or more when compiled with the other shipped patterns.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <sstream>

#include "collect/redactor.h"
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
        log += '\r';
        log += Filler(random);
        log += '\r';
        log += example;
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
    std::vector<Diagnostic> notes;
    auto compiled = CompiledRules::Build(loaded.rules, {tag}, &notes);
    ASSERT_TRUE(compiled.ok());
    // Every shipped rule goes through the prefilter: the comparison covers the fast path.
    EXPECT_TRUE(notes.empty()) << tag << ": " << FormatDiagnostic(notes.front());
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
              if (!segment.empty() && RE2::PartialMatch(segment, rule.match->get()) &&
                  (rule.unless == nullptr || rule.multiline ||
                   !RE2::PartialMatch(segment, rule.unless->get()))) {
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

std::string RandomOf(std::mt19937& random, std::string_view alphabet, std::size_t min,
                     std::size_t max) {
  std::string text(min + random() % (max - min + 1), ' ');
  for (char& c : text) {
    c = alphabet[random() % alphabet.size()];
  }
  return text;
}

constexpr std::string_view kAlnum =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
constexpr std::string_view kHex = "0123456789abcdef";
constexpr std::string_view kBase64 =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=";

// Something one of the redaction patterns is after, built-in or operator's, in one of the
// shapes it takes in logs and environments.
std::string SecretLike(std::mt19937& random) {
  switch (random() % 16) {
    case 0:
      return (random() % 2 ? "AKIA" : "ASIA") +
             RandomOf(random, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 16, 16);
    case 1:
      return std::string(random() % 2 ? "aws_secret_access_key = " : "\"SecretAccessKey\": \"") +
             RandomOf(random, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij0123456789/+", 40, 40);
    case 2:
      return "hf_" + RandomOf(random, kAlnum, 28, 40);
    case 3:
      return (random() % 2 ? "ghp_" + RandomOf(random, kAlnum, 34, 40)
                           : "github_pat_" + RandomOf(random, "abcdefXYZ0123_", 20, 30));
    case 4:
      return "eyJ" + RandomOf(random, "abcXYZ012_-", 6, 20) + ".eyJ" +
             RandomOf(random, "abcXYZ012_-", 6, 20) + "." + RandomOf(random, "abcXYZ012_-", 6, 20);
    case 5:
      return "wandb login --relogin " + RandomOf(random, kHex, 40, 40);
    case 6:
      return "wandb: " + RandomOf(random, "abc \n\t:", 0, 40) +
             (random() % 2 ? "api_key = " : "password ") + RandomOf(random, kHex, 40, 40);
    case 7:
      return "WANDB_API_KEY=" + RandomOf(random, kHex, 38, 42);
    case 8:
      return "Authorization: Bearer " + RandomOf(random, "abcXYZ012._~+/-", 5, 30) + "==";
    case 9:
      return "https://" + RandomOf(random, "user", 0, 4) + ":" +
             RandomOf(random, "p@ss:w0rd", 1, 12) + "@" + RandomOf(random, "host.example", 1, 12) +
             "/path";
    case 10: {
      std::string key =
          "-----BEGIN RSA PRIVATE KEY-----" + std::string(random() % 2 ? "\n" : "\\n");
      for (int line = 0, lines = static_cast<int>(1 + random() % 3); line < lines; ++line) {
        key += RandomOf(random, kBase64, 12, 40) + "\n";
      }
      return random() % 3 ? key + "-----END RSA PRIVATE KEY-----" : key;  // or truncated
    }
    // The operator's patterns below.
    case 11:
      return "sk-" + RandomOf(random, kAlnum, 18, 30);
    case 12:
      return std::string(random() % 2 ? "passw\xf6rd" : "PASSWORD") + "=" +
             RandomOf(random, kAlnum, 1, 12);
    case 13:
      return "tok\xe9n:" + RandomOf(random, kAlnum, 4, 8);
    case 14:
      return "\nsecret: " + RandomOf(random, kAlnum, 1, 8) + "\n";
    default:
      return RandomOf(random, kHex, 40, 40);  // a commit hash, not a W&B key
  }
}

// Near misses: letters of either case (ASCII and Latin-1), cut short, a stray byte inside.
std::string Mangle(std::string text, std::mt19937& random) {
  if (random() % 4 == 0) {
    for (char& c : text) {
      const auto byte = static_cast<unsigned char>(c);
      const bool letter = std::isalpha(byte) || (byte >= 0xc0 && byte != 0xd7 && byte != 0xf7);
      if (letter && random() % 2 == 0) {
        c = static_cast<char>(byte ^ 0x20);
      }
    }
  }
  if (random() % 6 == 0 && !text.empty()) {
    text.resize(random() % text.size());
  }
  if (random() % 8 == 0) {
    text.insert(random() % (text.size() + 1), 1, static_cast<char>(random() % 256));
  }
  return text;
}

std::string RandomSecretText(std::mt19937& random) {
  static const std::string kSeparators[] = {
      " ", "\n", "\r\n", "=", ": ", "\"", "\\n", std::string(1, '\0'), ""};
  std::string text;
  for (int piece = 0, pieces = static_cast<int>(1 + random() % 24); piece < pieces; ++piece) {
    if (random() % 3 == 0) {
      std::string filler = Filler(random);
      for (char& c : filler) {
        if (random() % 16 == 0) {
          c = static_cast<char>(0x80 + random() % 128);
        }
      }
      text += filler;
    } else {
      text += Mangle(SecretLike(random), random);
    }
    text += kSeparators[random() % std::size(kSeparators)];
  }
  return text;
}

TEST(PrefilterDifferential, RedactorAgreesWithPlainRe2) {
  // Operator patterns as written in configs: the prefilter takes the first, third and fourth;
  // the second (a case-folded non-ASCII letter) runs on RE2 alone.
  const collect::RedactionRules operator_rules{
      {},
      {"sk-[A-Za-z0-9]{20,}", "(?i)passw[o\xf6]rd=\\S+", "tok\\xe9n:\\w{6}", "(?m)^secret: \\S+$"}};
  auto fast = collect::Redactor::Create(operator_rules);
  auto plain = collect::Redactor::Create(operator_rules, collect::RedactorMatching::kRe2Only);
  ASSERT_TRUE(fast.ok() && plain.ok());
  // The comparison means something only if the fast path is really taken.
  ASSERT_EQ((*fast)->patterns(), (*plain)->patterns());
  EXPECT_EQ((*fast)->prefiltered_patterns(), (*fast)->patterns() - 1) << "all but the second";
  EXPECT_EQ((*plain)->prefiltered_patterns(), 0u);
  std::mt19937 random(20260314);
  std::set<std::string> redacted_by;
  for (int round = 0; round < 400; ++round) {
    const std::string text = RandomSecretText(random);
    std::string fast_text = text;
    std::string plain_text = text;
    collect::RedactionCounts fast_counts;
    collect::RedactionCounts plain_counts;
    (*fast)->RedactText(fast_text, fast_counts);
    (*plain)->RedactText(plain_text, plain_counts);
    ASSERT_EQ(fast_text, plain_text) << "round " << round << ", input:\n" << text;
    ASSERT_EQ(fast_counts.by_rule, plain_counts.by_rule) << "round " << round;
    // An environment: NUL-separated values, each redacted on its own.
    const std::string environ = "A=" + text.substr(0, text.size() / 2) + std::string(1, '\0') +
                                "B=" + text.substr(text.size() / 2);
    fast_counts = {};
    plain_counts = {};
    ASSERT_EQ((*fast)->RedactEnvironment(environ, fast_counts),
              (*plain)->RedactEnvironment(environ, plain_counts))
        << "round " << round;
    ASSERT_EQ(fast_counts.by_rule, plain_counts.by_rule) << "round " << round;
    for (const auto& [rule, n] : plain_counts.by_rule) {
      redacted_by.insert(rule);
    }
  }
  // Every pattern had something to redact, or the comparison proved little about it.
  for (const char* rule :
       {"pattern:private_key", "pattern:aws_access_key", "pattern:aws_secret", "pattern:hf_token",
        "pattern:github_token", "pattern:jwt", "pattern:wandb_key", "pattern:bearer",
        "pattern:url_password", "pattern:custom_1", "pattern:custom_2", "pattern:custom_3",
        "pattern:custom_4"}) {
    EXPECT_TRUE(redacted_by.contains(rule)) << rule;
  }
}

}  // namespace
}  // namespace trainwatch::rules
