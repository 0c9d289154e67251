// incidents.jsonl on a disk that fills up or fails (FakeFileSystem through the file seam): a
// record the disk refused waits in memory and is written, once, before the next one; a torn
// half-line never swallows the record after it; the history read back holds each record once.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "ops/incident_log.h"
#include "support/fake_file_system.h"

namespace trainwatch::ops {
namespace {

constexpr const char* kLog = "/var/lib/trainwatch/incidents.jsonl";

detect::Incident IncidentNamed(const std::string& id) {
  detect::Incident incident;
  incident.id = id;
  incident.kind = rules::RuleKind::kCrash;
  incident.opened = detect::WallTime{} + std::chrono::hours(24 * 365 * 56);
  incident.rules = {"py.traceback"};
  incident.summary = "RuntimeError: boom";
  incident.firings.push_back({});
  incident.firings.back().event.rule_id = "py.traceback";
  return incident;
}

std::string Content(const testing::FakeFileSystem& fs) {
  Result<std::unique_ptr<ReadableFile>> file = fs.OpenForReading(kLog);
  if (!file) {
    return "";
  }
  std::string text(1 << 16, '\0');
  text.resize(*(*file)->ReadAt(0, text));
  return text;
}

class IncidentLogDiskTest : public ::testing::TestWithParam<int> {
 protected:
  IncidentLogDiskTest() { fs_.MakeDirs("/var/lib/trainwatch"); }
  testing::FakeFileSystem fs_;
};

TEST_P(IncidentLogDiskTest, ARefusedRecordIsWrittenOnceTheDiskRecoversNeverTwice) {
  IncidentLog log(kLog, fs_);
  ASSERT_TRUE(log.Append(IncidentNamed("one")));
  fs_.FailWrites(kLog, GetParam(), /*partial=*/7);  // a short write, then the error
  Status refused = log.Append(IncidentNamed("two"));
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find(std::strerror(GetParam())), std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().message.find("1 record waits"), std::string::npos)
      << refused.error().message;
  ASSERT_FALSE(
      log.AppendResolved({"one", ResolvedBy::kAck, "fixed", {}, {}, {"py.traceback"}, ""}));
  EXPECT_EQ(log.unwritten(), 2u);

  fs_.FailWrites(kLog, 0);  // room again
  ASSERT_TRUE(log.Append(IncidentNamed("three")));
  EXPECT_EQ(log.unwritten(), 0u);

  Result<IncidentHistory> history = log.ReadHistory();
  ASSERT_TRUE(history) << history.error().message;
  EXPECT_EQ(history->incidents, 3u) << "one, two and three, each once:\n" << Content(fs_);
  EXPECT_EQ(history->open.size(), 2u) << "one resolved; two and three open";
  // The torn bytes of each refused try are lines of their own, which no reader takes for a
  // record; each record is there once.
  std::map<std::string, int> records;
  std::istringstream lines(Content(fs_));
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (record.is_object()) {
      ++records[record.value("id", record.value("resolved", std::string("?")))];
    }
  }
  EXPECT_EQ(records, (std::map<std::string, int>{{"one", 2}, {"three", 1}, {"two", 1}}))
      << "one's record and its resolution";
}

TEST_P(IncidentLogDiskTest, AFlushAtTheStopWritesWhatWaitsOnceTheDiskHasRoom) {
  IncidentLog log(kLog, fs_);
  fs_.FailWrites(kLog, GetParam());
  ASSERT_FALSE(log.Append(IncidentNamed("one")));
  ASSERT_FALSE(log.Flush()) << "still failing";
  fs_.FailWrites(kLog, 0);
  ASSERT_TRUE(log.Flush());
  ASSERT_TRUE(log.Flush()) << "nothing left: written once";
  Result<IncidentHistory> history = log.ReadHistory();
  ASSERT_TRUE(history);
  EXPECT_EQ(history->incidents, 1u);
}

TEST(IncidentLogDisk, PastItsBoundTheOldestWaitingRecordsGoAndAreCounted) {
  testing::FakeFileSystem fs;
  fs.MakeDirs("/var/lib/trainwatch");
  IncidentLog log(kLog, fs);
  fs.FailWrites(kLog, ENOSPC);
  for (std::size_t i = 0; i < IncidentLog::kMaxUnwritten + 3; ++i) {
    ASSERT_FALSE(log.Append(IncidentNamed(std::to_string(i))));
  }
  EXPECT_EQ(log.unwritten(), IncidentLog::kMaxUnwritten) << "memory stays bounded";
  fs.FailWrites(kLog, 0);
  EXPECT_EQ(log.lost(), 3u) << "the oldest three";
  ASSERT_TRUE(log.Flush());
  Result<IncidentHistory> history = log.ReadHistory();
  ASSERT_TRUE(history);
  EXPECT_EQ(history->incidents, IncidentLog::kMaxUnwritten);
}

INSTANTIATE_TEST_SUITE_P(FullOrFailingDisk, IncidentLogDiskTest, ::testing::Values(ENOSPC, EIO));

}  // namespace
}  // namespace trainwatch::ops
