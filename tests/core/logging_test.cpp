// The log line formats: JSON records that stay valid JSON whatever the message holds, and
// the journal's "<N>" priority prefix on every line.
#include "core/logging.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spdlog/details/log_msg.h>
#include <spdlog/formatter.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

namespace trainwatch {
namespace {

std::string Format(LogFormat format, bool journal, spdlog::level::level_enum level,
                   const std::string& message) {
  spdlog::details::log_msg msg("trainwatch", level, spdlog::string_view_t(message));
  // 2024-05-01T12:00:00.123Z, so the time field can be checked exactly.
  msg.time = spdlog::log_clock::time_point(std::chrono::milliseconds(1714564800123));
  spdlog::memory_buf_t out;
  MakeLogFormatter(format, journal)->format(msg, out);
  return {out.data(), out.size()};
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    lines.push_back(text.substr(start, end - start));
  }
  EXPECT_EQ(start, text.size()) << "the output must end with a newline: " << text;
  return lines;
}

TEST(LoggingTest, JsonRecordsStayOneValidObjectPerLineWhateverTheMessageHolds) {
  const std::string message = "bad \"quote\"\nsecond line\ttab \x1b[31m \xff\xfe end";
  const std::vector<std::string> lines =
      Lines(Format(LogFormat::kJson, false, spdlog::level::warn, message));
  ASSERT_EQ(lines.size(), 1u);
  const nlohmann::json record = nlohmann::json::parse(lines[0]);  // throws if invalid
  EXPECT_EQ(record["time"], "2024-05-01T12:00:00.123Z");
  EXPECT_EQ(record["level"], "warning");
  EXPECT_EQ(record["message"],
            "bad \"quote\"\nsecond line\ttab \x1b[31m \xef\xbf\xbd\xef\xbf\xbd end");
  EXPECT_EQ(record["logger"], "trainwatch");
  EXPECT_EQ(record["pid"], static_cast<long>(::getpid()));
  // Fields in a fixed order, for people reading the raw lines.
  EXPECT_EQ(lines[0].rfind("{\"time\":\"2024-05-01T12:00:00.123Z\",\"level\":\"warning\",", 0), 0u)
      << lines[0];
}

TEST(LoggingTest, JsonLevelsAreSpdlogsNames) {
  const std::vector<std::pair<spdlog::level::level_enum, std::string>> cases = {
      {spdlog::level::debug, "debug"},
      {spdlog::level::info, "info"},
      {spdlog::level::err, "error"},
      {spdlog::level::critical, "critical"}};
  for (const auto& [level, name] : cases) {
    EXPECT_EQ(nlohmann::json::parse(Format(LogFormat::kJson, false, level, "x"))["level"], name);
  }
}

TEST(LoggingTest, HumanLinesKeepTheirTimestampAwayFromTheJournal) {
  const std::string line = Format(LogFormat::kHuman, false, spdlog::level::info, "watching");
  EXPECT_TRUE(std::regex_match(
      line, std::regex(R"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} info watching\n)")))
      << line;
}

TEST(LoggingTest, JournalLinesCarryTheirSyslogPriorityOnEveryLine) {
  const std::vector<std::pair<spdlog::level::level_enum, std::string>> cases = {
      {spdlog::level::critical, "<2>critical boom\n"},
      {spdlog::level::err, "<3>error boom\n"},
      {spdlog::level::warn, "<4>warning boom\n"},
      {spdlog::level::info, "<6>info boom\n"},
      {spdlog::level::debug, "<7>debug boom\n"}};
  for (const auto& [level, expected] : cases) {
    EXPECT_EQ(Format(LogFormat::kHuman, true, level, "boom"), expected);
  }
  // journald splits a stream at newlines: each line of a multi-line message keeps its level.
  EXPECT_EQ(Format(LogFormat::kHuman, true, spdlog::level::err, "reload rejected:\na:1:2: bad"),
            "<3>error reload rejected:\n<3>a:1:2: bad\n");
}

TEST(LoggingTest, JsonForTheJournalIsPrefixedAndStillJsonAfterThePrefix) {
  const std::string line = Format(LogFormat::kJson, true, spdlog::level::err, "a\nb");
  ASSERT_EQ(line.rfind("<3>{", 0), 0u) << line;
  ASSERT_EQ(Lines(line).size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(line.substr(3))["message"], "a\nb");
}

// main() may set up logging again once the command line names a format.
TEST(LoggingTest, SetUpLoggingReplacesTheDefaultLogger) {
  SetUpLogging(LogFormat::kJson);
  SetUpLogging(LogFormat::kHuman);
  EXPECT_EQ(spdlog::default_logger()->name(), "trainwatch");
}

TEST(LoggingTest, TheJournalStreamIsRecognisedByDeviceAndInode) {
  char path[] = "/tmp/trainwatch-logging-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::unlink(path);
  struct stat status {};
  ASSERT_EQ(::fstat(fd, &status), 0);
  const std::string stream = std::to_string(status.st_dev) + ":" + std::to_string(status.st_ino);
  EXPECT_TRUE(IsJournalStream(fd, stream.c_str()));
  EXPECT_FALSE(IsJournalStream(fd, nullptr));
  EXPECT_FALSE(IsJournalStream(fd, ""));
  EXPECT_FALSE(IsJournalStream(fd, (stream + "1").c_str()));  // another inode
  EXPECT_FALSE(IsJournalStream(fd, (stream + "x").c_str()));  // not the documented form
  EXPECT_FALSE(IsJournalStream(fd, std::to_string(status.st_dev).c_str()));
  EXPECT_FALSE(IsJournalStream(-1, stream.c_str()));
  ::close(fd);
}

}  // namespace
}  // namespace trainwatch
