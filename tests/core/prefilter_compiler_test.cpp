#include "core/prefilter_compiler.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/multi_regex.h"
#include "core/multi_regex_scanner.h"
#include "core/regex_options.h"
#include "support/file_text.h"
#include "support/temp_dir.h"

namespace trainwatch {
namespace {

// The helper is the real binary's hidden subcommand, as the daemon runs it.
const std::vector<std::string> kHelper = {TRAINWATCH_TEST_BINARY, "compile-prefilter"};

class PrefilterCompilerTest : public ::testing::Test {
 protected:
  void TearDown() override { CompilePrefiltersWith({}); }  // process-wide: as it was
};

PrefilterCompileRequest Request(const std::vector<const char*>& expressions) {
  PrefilterCompileRequest request;
  request.expressions = expressions;
  for (unsigned i = 0; i < expressions.size(); ++i) {
    request.flags.push_back(0);
    request.ids.push_back(i * 10);
  }
  return request;
}

MultiRegex BuildSet(const std::vector<std::string>& regexes, const MultiRegexOptions& options) {
  std::vector<RegexPattern> patterns;
  patterns.reserve(regexes.size());
  for (const std::string& regex : regexes) {
    patterns.push_back({std::make_unique<const RE2>(regex, RegexOptions()), {}});
  }
  return MultiRegex::Build(std::move(patterns), options);
}

std::set<std::uint32_t> Proposed(const MultiRegex& set, std::string_view text) {
  auto scanner = MultiRegexScanner::Create(set);
  EXPECT_TRUE(scanner.ok());
  std::set<std::uint32_t> found;
  EXPECT_TRUE(scanner->Scan(text, [&](std::uint32_t pattern, std::uint64_t) {
    found.insert(pattern);
    return true;
  }));
  return found;
}

TEST_F(PrefilterCompilerTest, TheHelperCompilesWhatThisProcessWould) {
  CompilePrefiltersWith(kHelper);
  const PrefilterCompileResult compiled = CompilePrefilter(Request({"boom", "err\\d+"}));
  ASSERT_TRUE(compiled.database) << compiled.message;
  EXPECT_FALSE(compiled.serialized.empty());  // it came from the helper

  // A set built through the helper proposes what one compiled here does, and its database
  // lands in the cache as the helper wrote it.
  testing::TempDir dir;
  MultiRegexOptions options;
  options.segmented = true;
  options.cache_dir = dir.PathOf("cache");
  const MultiRegex helped = BuildSet({"boom", "err\\d+", "^fatal"}, options);
  CompilePrefiltersWith({});
  MultiRegexOptions uncached;
  uncached.segmented = true;
  const MultiRegex here = BuildSet({"boom", "err\\d+", "^fatal"}, uncached);
  const std::string text = "a boom\nerr7\nfatal: x\nnot fatal";
  EXPECT_EQ(Proposed(helped, text), Proposed(here, text));
  EXPECT_EQ(Proposed(helped, text), (std::set<std::uint32_t>{0, 1, 2}));
  EXPECT_EQ(helped.prefiltered_count(), 3u);
  std::size_t cached = 0;
  for (const auto& entry : std::filesystem::directory_iterator(options.cache_dir)) {
    cached += entry.path().filename().string().starts_with("hs-") ? 1 : 0;
  }
  EXPECT_EQ(cached, 1u);
}

TEST_F(PrefilterCompilerTest, TheHelperReportsTheExpressionTheCompilerRefused) {
  const PrefilterCompileRequest request = Request({"boom", "(?U)fail.+ed", "bang"});
  const PrefilterCompileResult here = CompilePrefilter(request);
  CompilePrefiltersWith(kHelper);
  const PrefilterCompileResult helped = CompilePrefilter(request);
  EXPECT_FALSE(helped.database);
  EXPECT_EQ(helped.failed_index, 1);
  EXPECT_EQ(helped.failed_index, here.failed_index);
  EXPECT_EQ(helped.message, here.message);
  EXPECT_FALSE(helped.message.empty());

  // MultiRegex drops that one and compiles the rest, through the helper each time.
  const MultiRegex set = BuildSet({"boom", "(?U)fail.+ed", "bang"}, {});
  EXPECT_TRUE(set.prefiltered(0));
  EXPECT_FALSE(set.prefiltered(1));
  EXPECT_TRUE(set.prefiltered(2));
  EXPECT_EQ(Proposed(set, "bang boom failed"), (std::set<std::uint32_t>{0, 2}));
}

// A helper that cannot run or answers nonsense costs memory, never the prefilter.
TEST_F(PrefilterCompilerTest, AHelperThatFailsLeavesTheCompileToThisProcess) {
  for (const std::vector<std::string>& broken :
       {std::vector<std::string>{"/nonexistent/trainwatch", "compile-prefilter"},
        std::vector<std::string>{"/bin/echo", "not a database"},
        std::vector<std::string>{"/bin/false"},
        std::vector<std::string>{"/bin/sh", "-c",
                                 "cat >/dev/null; printf D; head -c 3000 /dev/zero"},
        std::vector<std::string>{"/bin/sh", "-c", "kill -SEGV $$"}}) {
    CompilePrefiltersWith(broken);
    const PrefilterCompileResult compiled = CompilePrefilter(Request({"boom"}));
    ASSERT_TRUE(compiled.database) << broken.back();
    EXPECT_TRUE(compiled.serialized.empty()) << broken.back();  // compiled here
  }
}

// A helper that hangs is killed at its deadline and the compile is done here: a slow
// helper never costs the daemon its start or a reload.
TEST_F(PrefilterCompilerTest, AHelperPastItsDeadlineIsKilledAndTheCompileIsDoneHere) {
  testing::TempDir dir;
  const std::string started_log = dir.PathOf("started");
  CompilePrefiltersWith(
      {"/bin/sh", "-c", "echo started >> '" + started_log + "'; cat >/dev/null; exec sleep 30"},
      std::chrono::milliseconds(200));
  const auto started = std::chrono::steady_clock::now();
  const PrefilterCompileResult compiled = CompilePrefilter(Request({"boom"}));
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(20));
  ASSERT_TRUE(compiled.database) << compiled.message;
  EXPECT_TRUE(compiled.serialized.empty()) << "compiled here";

  // Later compiles do not wait for a helper again: a start must stay within systemd's limit.
  const MultiRegex set = BuildSet({"boom"}, {});
  EXPECT_TRUE(set.prefiltered(0));
  EXPECT_TRUE(set.prefilter_error().empty()) << set.prefilter_error();
  EXPECT_EQ(testing::ReadFile(started_log), "started\n") << "one helper started, not two";
}

// A set asked for at once on the loop (the redactor) is compiled here even with a helper set.
TEST_F(PrefilterCompilerTest, ASetCanAskToBeCompiledHere) {
  testing::TempDir dir;
  const std::string started_log = dir.PathOf("started");
  CompilePrefiltersWith({"/bin/sh", "-c", "echo started >> '" + started_log + "'; exit 1"});
  MultiRegexOptions options;
  options.compile_in_helper = false;
  const MultiRegex set = BuildSet({"boom"}, options);
  EXPECT_TRUE(set.prefiltered(0));
  EXPECT_FALSE(std::filesystem::exists(started_log)) << "no helper started";
  BuildSet({"bang"}, {});
  EXPECT_TRUE(std::filesystem::exists(started_log)) << "the default asks the helper";
}

TEST_F(PrefilterCompilerTest, TheHelperRefusesWhatIsNotARequest) {
  testing::TempDir dir;
  const PrefilterCompileRequest request = Request({"boom"});
  std::string whole = EncodePrefilterRequest(request);
  for (const std::string& input :
       {std::string("not a request"), whole.substr(0, whole.size() - 1), whole + "x"}) {
    dir.Write("in", input);
    const int in = open(dir.PathOf("in").c_str(), O_RDONLY | O_CLOEXEC);
    const int out = open(dir.PathOf("out").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    EXPECT_EQ(RunPrefilterCompilerHelper(in, out), 1);
    close(in);
    close(out);
    EXPECT_EQ(testing::ReadFile(dir.PathOf("out")), "");
  }
  dir.Write("in", whole);
  const int in = open(dir.PathOf("in").c_str(), O_RDONLY | O_CLOEXEC);
  const int out = open(dir.PathOf("out").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  EXPECT_EQ(RunPrefilterCompilerHelper(in, out), 0);
  close(in);
  close(out);
  EXPECT_EQ(testing::ReadFile(dir.PathOf("out")).substr(0, 1), "D");
}

}  // namespace
}  // namespace trainwatch
