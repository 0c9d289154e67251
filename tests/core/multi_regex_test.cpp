#include "core/multi_regex.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/multi_regex_scanner.h"
#include "core/prefilter_cache.h"
#include "core/regex_options.h"
#include "support/file_text.h"
#include "support/temp_dir.h"

namespace trainwatch {
namespace {

using Candidate = std::pair<std::uint32_t, std::uint64_t>;  // pattern, end

MultiRegex BuildSet(const std::vector<std::string>& regexes,
                    const MultiRegexOptions& options = {}) {
  std::vector<RegexPattern> patterns;
  for (const std::string& regex : regexes) {
    auto re2 = std::make_unique<const RE2>(regex, RegexOptions());
    EXPECT_TRUE(re2->ok()) << regex << ": " << re2->error();
    patterns.push_back({std::move(re2), {}});
  }
  return MultiRegex::Build(std::move(patterns), options);
}

std::set<Candidate> Candidates(const MultiRegex& set, std::string_view text) {
  auto scanner = MultiRegexScanner::Create(set);
  EXPECT_TRUE(scanner.ok());
  std::set<Candidate> found;
  EXPECT_TRUE(scanner->Scan(text, [&](std::uint32_t pattern, std::uint64_t end) {
    found.emplace(pattern, end);
    return true;
  }));
  return found;
}

std::set<std::uint32_t> Proposed(const MultiRegex& set, std::string_view text) {
  std::set<std::uint32_t> patterns;
  for (const auto& [pattern, end] : Candidates(set, text)) {
    patterns.insert(pattern);
  }
  return patterns;
}

TEST(MultiRegex, PatternsThePrefilterCannotTakeRunOnRe2AloneAndSayWhy) {
  // 1: Hyperscan's compiler refuses (?U); 2: PrefilterForm refuses a case-folded high byte.
  const MultiRegex set = BuildSet({"boom", "(?U)fail.+ed", "(?i)caf\xe9", "err\\d+"});
  ASSERT_EQ(set.size(), 4u);
  EXPECT_TRUE(set.prefiltered(0));
  EXPECT_FALSE(set.prefiltered(1));
  EXPECT_FALSE(set.prefiltered(2));
  EXPECT_TRUE(set.prefiltered(3));
  // In the order they were found out: the form first, then the compiler.
  EXPECT_EQ(set.unfiltered(), (std::vector<std::size_t>{2, 1}));
  ASSERT_EQ(set.fallbacks().size(), 2u);
  EXPECT_EQ(set.fallbacks()[0].pattern, 2u);
  EXPECT_NE(set.fallbacks()[0].why.find("case-insensitive"), std::string::npos);
  EXPECT_EQ(set.fallbacks()[1].pattern, 1u);
  EXPECT_FALSE(set.fallbacks()[1].why.empty());
  EXPECT_TRUE(set.prefilter_error().empty());
  // The refused ones are never proposed; RE2 still judges them.
  EXPECT_EQ(Proposed(set, "boom, failed, CAF\xc9, err7"), (std::set<std::uint32_t>{0, 3}));
  EXPECT_TRUE(set.Matches(1, "fail: it stopped"));
  EXPECT_TRUE(set.Matches(2, "CAF\xc9"));
  EXPECT_FALSE(set.Matches(0, "bo om"));
}

// A prefiltered pattern's RE2 judges only what the prefilter proposes: it is compiled at its
// first use (each holds kilobytes, most never judge a line); one on RE2 alone keeps its own.
TEST(MultiRegex, APrefilteredPatternsRe2IsCompiledAtItsFirstUse) {
  const MultiRegex set = BuildSet({"boom \\d+", "(?U)fail.+ed"});
  ASSERT_TRUE(set.prefiltered(0));
  ASSERT_FALSE(set.prefiltered(1));
  EXPECT_FALSE(set.lazy_regex(0).compiled());
  EXPECT_TRUE(set.lazy_regex(1).compiled());
  EXPECT_EQ(set.lazy_regex(0).pattern(), "boom \\d+");
  // From several threads at once: one compile, every thread the same verdict.
  std::vector<std::thread> threads;
  threads.reserve(4);
  std::atomic<int> matched{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] { matched += set.Matches(0, "a boom 42") ? 1 : 0; });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  EXPECT_EQ(matched, 4);
  EXPECT_TRUE(set.lazy_regex(0).compiled());
  EXPECT_FALSE(set.Matches(0, "boom x"));
  EXPECT_EQ(set.regex(0).options().encoding(), RE2::Options::EncodingLatin1);  // its options kept
}

TEST(MultiRegex, ReportsEveryEndUnlessOneCandidatePerPatternIsAsked) {
  const MultiRegex every = BuildSet({"boom", "err\\d+"});
  // "err42" may end after the 4 and after the 2.
  EXPECT_EQ(Candidates(every, "xx boom err42"), (std::set<Candidate>{{0, 7}, {1, 12}, {1, 13}}));
  MultiRegexOptions options;
  options.first_candidate_only = true;
  const MultiRegex first = BuildSet({"boom", "err\\d+"}, options);
  auto scanner = MultiRegexScanner::Create(first);
  ASSERT_TRUE(scanner.ok());
  std::vector<Candidate> seen;
  ASSERT_TRUE(scanner->Scan("err1 boom err42 boom", [&](std::uint32_t pattern, std::uint64_t end) {
    seen.emplace_back(pattern, end);
    return true;
  }));
  EXPECT_EQ(seen, (std::vector<Candidate>{{1, 4}, {0, 9}}));
}

// A plain word is judged where the prefilter saw it end, byte for byte; anything else by RE2.
TEST(MultiRegex, APlainWordIsConfirmedWhereThePrefilterSawItEnd) {
  const MultiRegex set = BuildSet({"(?i)loss", "Segmentation fault", "loss\\s*=\\s*nan"});
  EXPECT_TRUE(set.MatchesEndingAt(0, "step 3 LOSS=2.3", 11));
  EXPECT_TRUE(set.MatchesEndingAt(0, "step 3 loss=2.3", 3)) << "elsewhere: RE2 still finds it";
  EXPECT_FALSE(set.MatchesEndingAt(0, "step 3 lo$s=2.3", 11));
  EXPECT_TRUE(set.MatchesEndingAt(1, "Segmentation fault (core dumped)", 18));
  EXPECT_FALSE(set.MatchesEndingAt(1, "segmentation fault (core dumped)", 18)) << "case counts";
  // ':' is no letter: 0x1A | 0x20 would be ':', and must not pass for it.
  const MultiRegex colon = BuildSet({"(?i)a:b"});
  EXPECT_FALSE(colon.MatchesEndingAt(0,
                                     std::string("a\x1a"
                                                 "b"),
                                     3));
  EXPECT_TRUE(colon.MatchesEndingAt(0, "A:B", 3));
  EXPECT_TRUE(set.MatchesEndingAt(2, "loss = nan", 10));
  EXPECT_FALSE(set.MatchesEndingAt(2, "loss = 2.0", 10));
}

TEST(MultiRegex, ACallbackThatSaysStopEndsTheScan) {
  const MultiRegex set = BuildSet({"a"});
  auto scanner = MultiRegexScanner::Create(set);
  ASSERT_TRUE(scanner.ok());
  int calls = 0;
  EXPECT_TRUE(scanner->Scan("aaaa", [&](std::uint32_t, std::uint64_t) {
    ++calls;
    return false;
  }));
  EXPECT_EQ(calls, 1);
}

TEST(MultiRegex, WithoutPrefilterEveryPatternRunsOnRe2) {
  MultiRegexOptions options;
  options.prefilter = false;
  const MultiRegex set = BuildSet({"boom", "err\\d+"}, options);
  EXPECT_EQ(set.unfiltered(), (std::vector<std::size_t>{0, 1}));
  EXPECT_FALSE(set.prefiltered(0));
  EXPECT_TRUE(set.prefilter_error().empty());  // asked for, not a failure
  EXPECT_TRUE(Candidates(set, "boom err1").empty());
  EXPECT_TRUE(set.Matches(1, "err1"));
}

TEST(MultiRegex, AnEmptySetScansToNothing) {
  const MultiRegex set = BuildSet({});
  EXPECT_EQ(set.size(), 0u);
  EXPECT_TRUE(Candidates(set, "anything").empty());
}

// Whatever RE2 matches, the prefilter proposes: per segment for a segmented set (the rules'
// batches), per text otherwise (the redactor).
struct AgreeCase {
  std::string name;
  std::string regex;
  bool segmented;
  std::string text;  // segments separated by '\n' when segmented
};

class MultiRegexAgreeTest : public ::testing::TestWithParam<AgreeCase> {};

TEST_P(MultiRegexAgreeTest, ProposesWhatRe2Matches) {
  const AgreeCase& c = GetParam();
  MultiRegexOptions options;
  options.segmented = c.segmented;
  // With a neighbour, so the pattern is compiled into a set, as in use.
  const MultiRegex set = BuildSet({"neighbour\\d", c.regex}, options);
  const std::set<Candidate> candidates = Candidates(set, c.text);
  std::vector<std::pair<std::size_t, std::size_t>> spans;  // [begin, end] of each judged text
  if (c.segmented) {
    std::size_t begin = 0;
    while (begin <= c.text.size()) {
      const std::size_t end = std::min(c.text.find('\n', begin), c.text.size());
      spans.emplace_back(begin, end);
      begin = end + 1;
    }
  } else {
    spans.emplace_back(0, c.text.size());
  }
  bool any = false;
  for (const auto& [begin, end] : spans) {
    const std::string_view judged = std::string_view(c.text).substr(begin, end - begin);
    if (!set.Matches(1, judged)) {
      continue;
    }
    any = true;
    if (!set.prefiltered(1)) {
      continue;  // RE2 runs on every text anyway
    }
    bool proposed = false;
    for (const auto& [pattern, at] : candidates) {
      // A match ending on the segment's '\n' belongs to the segment it closes.
      proposed = proposed || (pattern == 1 && at >= begin && at <= end + 1);
    }
    EXPECT_TRUE(proposed) << "no candidate in \"" << judged << "\"";
  }
  EXPECT_TRUE(any) << "the case must hold a match, or it tests nothing";
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MultiRegexAgreeTest,
    ::testing::Values(AgreeCase{"LineAnchors", "^\\s*Killed$", true,
                                "a long line of 18+ bytes\n  Killed\nx"},
                      AgreeCase{"SegmentStart", "\\AFOO", true, "zzz\nFOO bar"},
                      AgreeCase{"SegmentEnd", "BAR\\z", true, "BAR x\nxBAR\nq"},
                      AgreeCase{"TextAnchors", "\\Atoken=\\w+\\z", false, "token=abc"},
                      AgreeCase{"MultilineFlag", "(?m)^key: \\S+$", false, "x\nkey: v\ny"},
                      AgreeCase{"HighByteLiteral", "caf\xe9", true, "le CAF\xc9\ncaf\xe9 au lait"},
                      AgreeCase{"HexEscape", "pass\\xe9=\\S+", false, "\x01pass\xe9=s3cret\xff"},
                      AgreeCase{"LatinLetterClass", "\\pL{3}\\d", false,
                                "\xe9\xe8\xe0"
                                "7"},
                      AgreeCase{"CaselessHighByte", "(?i)caf\xe9", true, "CAF\xc9"},
                      AgreeCase{"Caseless", "(?i)bearer\\s+\\S{8,}", false, "BEARER abcdefgh"},
                      AgreeCase{"Quoted", "\\Q[x.y]\\E", false, "a[x.y]b"},
                      AgreeCase{"AnyByte", "a\\Cb", false,
                                "a\x80"
                                "b"},
                      AgreeCase{"BoundedGap", "wandb(?s:.{0,30}?)key", false, "wandb\n\n  api key"},
                      AgreeCase{"NulInText", "x\\x00y", false, std::string("ax\0yb", 5)}),
    [](const ::testing::TestParamInfo<AgreeCase>& c) { return c.param.name; });

TEST(MultiRegexCache, ALaterBuildLoadsTheDatabaseInsteadOfCompiling) {
  testing::TempDir dir;
  MultiRegexOptions options;
  options.segmented = true;
  options.cache_dir = dir.PathOf("cache");
  const MultiRegex boom = BuildSet({"boom"}, options);
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(options.cache_dir)) {
    files.push_back(entry.path());
  }
  ASSERT_EQ(files.size(), 1u);
  EXPECT_TRUE(files[0].filename().string().starts_with("hs-"));
  const std::string boom_bytes = testing::ReadFile(files[0].string());

  const MultiRegex bang = BuildSet({"bang"}, options);
  std::filesystem::path bang_file;
  for (const auto& entry : std::filesystem::directory_iterator(options.cache_dir)) {
    if (entry.path() != files[0]) {
      bang_file = entry.path();
    }
  }
  ASSERT_FALSE(bang_file.empty());
  EXPECT_EQ(Proposed(bang, "bang"), (std::set<std::uint32_t>{0}));
  // A later build of the same rules loads the file (a compile would rename a new one in).
  struct stat before {};
  ::stat(bang_file.c_str(), &before);
  EXPECT_EQ(Proposed(BuildSet({"bang"}, options), "bang"), (std::set<std::uint32_t>{0}));
  struct stat after {};
  ::stat(bang_file.c_str(), &after);
  EXPECT_EQ(before.st_ino, after.st_ino);

  // The red team's attack: the "boom" database planted where the one for "bang" is looked
  // for. It is matched by its content, not its name: refused, and "bang" compiled again.
  dir.Write(std::filesystem::relative(bang_file, dir.path()).string(), boom_bytes);
  const MultiRegex loaded = BuildSet({"bang"}, options);
  EXPECT_EQ(Proposed(loaded, "bang"), (std::set<std::uint32_t>{0}));
  EXPECT_EQ(Proposed(loaded, "boom"), (std::set<std::uint32_t>{}));

  // A damaged file is dropped and compiled again.
  dir.Write(std::filesystem::relative(bang_file, dir.path()).string(), "not a database");
  const MultiRegex recompiled = BuildSet({"bang"}, options);
  EXPECT_EQ(Proposed(recompiled, "bang"), (std::set<std::uint32_t>{0}));
  EXPECT_NE(testing::ReadFile(bang_file.string()), "not a database");
}

// The right content is not enough either: a file another user owns, that others may write, or
// a link to one, is never loaded (each is compiled again, and the cache's own file replaces it).
TEST(MultiRegexCache, AFileOthersCouldHaveWrittenIsNeverLoaded) {
  testing::TempDir dir;
  MultiRegexOptions options;
  options.cache_dir = dir.PathOf("cache");
  BuildSet({"boom"}, options);
  const std::string boom = std::filesystem::directory_iterator(options.cache_dir)->path().string();
  const std::string good = testing::ReadFile(boom);
  auto loads = [&] {
    // The file's inode before the build: a build that compiles renames a new one into place.
    struct stat before {};
    ::lstat(boom.c_str(), &before);
    BuildSet({"boom"}, options);
    struct stat after {};
    ::lstat(boom.c_str(), &after);
    return before.st_ino == after.st_ino;
  };
  EXPECT_TRUE(loads());
  ::chmod(boom.c_str(), 0666);
  EXPECT_FALSE(loads());
  ::chown(boom.c_str(), ::geteuid() + 4242, -1);
  EXPECT_FALSE(loads());
  const std::string elsewhere = dir.Write("elsewhere.db", good);
  std::filesystem::remove(boom);
  std::filesystem::create_symlink(elsewhere, boom);
  EXPECT_FALSE(loads());
  EXPECT_FALSE(std::filesystem::is_symlink(boom));
}

TEST(MultiRegexCache, KeepsTheMostRecentDatabasesOnly) {
  testing::TempDir dir;
  MultiRegexOptions options;
  options.cache_dir = dir.PathOf("cache");
  for (int i = 0; i < 20; ++i) {
    BuildSet({"pattern" + std::to_string(i)}, options);
  }
  const auto files = std::distance(std::filesystem::directory_iterator(options.cache_dir),
                                   std::filesystem::directory_iterator());
  EXPECT_EQ(static_cast<std::size_t>(files), kMaxCached);
}

// Concurrent scans share the cache, each writing its own temporary; one left by a writer
// killed mid-write goes once it is stale, and one being written now stays.
TEST(MultiRegexCache, WritersUseTheirOwnTemporariesAndStaleOnesGo) {
  testing::TempDir dir;
  MultiRegexOptions options;
  options.cache_dir = dir.PathOf("cache");
  std::filesystem::create_directories(options.cache_dir);
  const std::string stale = options.cache_dir + "/hs-0000000000000001.db.99-0.tmp";
  const std::string fresh = options.cache_dir + "/hs-0000000000000002.db.98-0.tmp";
  dir.Write("cache/hs-0000000000000001.db.99-0.tmp", "half");
  dir.Write("cache/hs-0000000000000002.db.98-0.tmp", "half");
  std::filesystem::last_write_time(
      stale, std::filesystem::file_time_type::clock::now() - std::chrono::hours(1));
  BuildSet({"boom"}, options);
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_TRUE(std::filesystem::exists(fresh));
  std::size_t databases = 0;
  for (const auto& entry : std::filesystem::directory_iterator(options.cache_dir)) {
    databases += entry.path().extension() == ".db" ? 1 : 0;
  }
  EXPECT_EQ(databases, 1u) << "renamed into place, no temporary of its own left";
}

}  // namespace
}  // namespace trainwatch
