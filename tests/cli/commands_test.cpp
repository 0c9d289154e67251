#include "cli/commands.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/temp_dir.h"

namespace trainwatch::cli {
namespace {

namespace fs = std::filesystem;

class CommandsTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& text) {
    return temp_.Write(name, text);
  }
  testing::TempDir temp_;
  const fs::path& dir_ = temp_.path();
  std::ostringstream out_, err_;
};

TEST_F(CommandsTest, CheckOfShippedPacksSucceedsWithASummary) {
  CheckOptions options{{TRAINWATCH_TEST_RULES_DIR}};
  EXPECT_EQ(RunCheck(options, out_, err_), kExitClean) << err_.str();
  EXPECT_NE(out_.str().find(" rules in "), std::string::npos);
  EXPECT_NE(out_.str().find("examples behave"), std::string::npos);
  EXPECT_NE(out_.str().find("causes: "), std::string::npos);
  EXPECT_NE(out_.str().find(" hardware, "), std::string::npos) << out_.str();
}

TEST_F(CommandsTest, CheckReportsEveryProblemWithLocationAndExits2) {
  const std::string bad = Write("bad.yaml",
                                "rules:\n"
                                "  - id: demo.a\n    kind: crash\n    tags: [train]\n"
                                "    description: A\n    pattern: 'boom'\n"
                                "    examples: {fires: ['no match here'], quiet: ['boom']}\n"
                                "  - id: demo.b\n    kind: crash\n    tags: [train]\n"
                                "    description: B\n    pattern: 'x('\n"
                                "    examples: {fires: [x], quiet: [y]}\n");
  CheckOptions options{{bad}};
  EXPECT_EQ(RunCheck(options, out_, err_), kExitError);
  EXPECT_NE(err_.str().find(bad + ":12:14: pattern is not a valid RE2 regex"), std::string::npos)
      << err_.str();
  // The regex error stops the example run for that load, so fix it and look again.
  const std::string examples_only =
      Write("examples.yaml",
            "rules:\n"
            "  - id: demo.a\n    kind: crash\n    tags: [train]\n"
            "    description: A\n    pattern: 'boom'\n"
            "    examples: {fires: ['no match here'], quiet: ['boom']}\n");
  std::ostringstream err2;
  EXPECT_EQ(RunCheck(CheckOptions{{examples_only}}, out_, err2), kExitError);
  EXPECT_NE(err2.str().find(examples_only + ":7:24: rule 'demo.a': example \"no match here\" "
                                            "should fire but does not"),
            std::string::npos)
      << err2.str();
  EXPECT_NE(err2.str().find("example \"boom\" should stay quiet but fires"), std::string::npos);
}

TEST_F(CommandsTest, ScanExitCodes) {
  const std::string crash = Write("crash.log", "ok\nRuntimeError: CUDA out of memory.\n");
  const std::string clean = Write("clean.log", "step 1 loss 0.3\nstep 2 loss 0.2\n");
  const std::string warn = Write("warn.log", "Sending process 1 closing signal SIGTERM\n");
  ScanOptions options;
  options.rule_paths = {TRAINWATCH_TEST_RULES_DIR};
  options.files = {clean};
  EXPECT_EQ(RunScan(options, out_, err_), kExitClean);
  options.files = {warn};
  EXPECT_EQ(RunScan(options, out_, err_), kExitClean);  // a warning is not an alarm
  options.files = {clean, crash};
  EXPECT_EQ(RunScan(options, out_, err_), kExitFired);
  options.files = {crash, (dir_ / "missing.log").string()};
  EXPECT_EQ(RunScan(options, out_, err_), kExitError);
  EXPECT_NE(err_.str().find("missing.log: No such file or directory"), std::string::npos);
  options.files = {dir_.string()};
  EXPECT_EQ(RunScan(options, out_, err_), kExitError);
  EXPECT_NE(err_.str().find(": is a directory"), std::string::npos);
}

TEST_F(CommandsTest, ScanJsonLinesCarryTheRequiredFields) {
  const std::string log = Write("t.log",
                                "Traceback (most recent call last):\n"
                                "  File \"a.py\", line 1, in <module>\n"
                                "ValueError: bad \xff byte\n");
  ScanOptions options;
  options.rule_paths = {TRAINWATCH_TEST_RULES_DIR};
  options.format = EventFormat::kJsonLines;
  options.files = {log};
  EXPECT_EQ(RunScan(options, out_, err_), kExitFired);
  const std::string line = out_.str();
  for (const std::string& field : std::vector<std::string>{
           "\"rule\":\"python.traceback\"", "\"kind\":\"crash\"", "\"line\":1",
           "\"file\":\"" + log + "\"", "\"text\":\"Traceback (most recent call last):\"",
           "\"summary\":\"ValueError: bad \xef\xbf\xbd byte\"", "\"summary_line\":3"}) {
    EXPECT_NE(line.find(field), std::string::npos) << field << "\n" << line;
  }
}

TEST_F(CommandsTest, ScanWithBrokenRulesExits2WithoutScanning) {
  const std::string bad = Write("bad.yaml", "rules:\n  - id: x\n");
  const std::string log = Write("crash.log", "CUDA out of memory\n");
  ScanOptions options;
  options.rule_paths = {bad};
  options.files = {log};
  EXPECT_EQ(RunScan(options, out_, err_), kExitError);
  EXPECT_TRUE(out_.str().empty());
  EXPECT_NE(err_.str().find(bad + ":2:5:"), std::string::npos) << err_.str();
}

TEST_F(CommandsTest, ScanOfATagNoRuleHasWarns) {
  const std::string log = Write("x.log", "anything\n");
  ScanOptions options;
  options.rule_paths = {TRAINWATCH_TEST_RULES_DIR};
  options.tags = {"nosuchtag"};
  options.files = {log};
  EXPECT_EQ(RunScan(options, out_, err_), kExitClean);
  EXPECT_NE(err_.str().find("no pattern or threshold rule has tag 'nosuchtag'"), std::string::npos);
}

}  // namespace
}  // namespace trainwatch::cli
