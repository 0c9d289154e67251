#include "ops/incident_log.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "detect/incident_json.h"
#include "support/temp_dir.h"

namespace trainwatch::ops {
namespace {

using detect::IncidentJson;

using detect::Firing;
using detect::Incident;
using detect::WallTime;
using json = nlohmann::json;
using std::chrono::milliseconds;

// 2024-01-02T03:04:05.678Z
const WallTime kOpened = WallTime{} + milliseconds(1704164645678);

Firing FileFiring(std::string file_id, std::uint32_t head_bytes, std::uint64_t head_hash,
                  std::uint64_t line, std::uint64_t summary_line = 0) {
  Firing firing;
  firing.event.rule_id = "py.traceback";
  firing.event.kind = rules::RuleKind::kCrash;
  firing.event.line = line;
  firing.event.text = "Traceback (most recent call last):";
  if (summary_line != 0) {
    firing.event.summary = "RuntimeError: boom";
    firing.event.summary_line = summary_line;
  }
  firing.source = "train";
  firing.stream = "/logs/train.log";
  firing.file_id = std::move(file_id);
  firing.head_bytes = head_bytes;
  firing.head_hash = head_hash;
  firing.time = kOpened;
  return firing;
}

Incident MakeIncident(std::string id, WallTime opened, std::vector<std::string> rules,
                      std::vector<Firing> firings = {}) {
  Incident incident;
  incident.id = std::move(id);
  incident.summary = "something broke";
  incident.rules = std::move(rules);
  incident.firings = std::move(firings);
  incident.opened = opened;
  incident.closed = opened + std::chrono::seconds(2);
  return incident;
}

IncidentHistory ReadOrFail(const IncidentLog& log) {
  Result<IncidentHistory> history = log.ReadHistory();
  EXPECT_TRUE(history.ok()) << (history.ok() ? "" : history.error().message);
  return history.ok() ? std::move(history).value() : IncidentHistory{};
}

// The fired entries of one file id as (head_bytes, head_hash, line), in map order.
using Fired = std::tuple<std::uint32_t, std::uint64_t, std::uint64_t>;
std::vector<Fired> FiredOf(const IncidentHistory& history, const std::string& file_id) {
  std::vector<Fired> out;
  auto [begin, end] = history.fired.equal_range(file_id);
  for (auto it = begin; it != end; ++it) {
    out.emplace_back(it->second.head_bytes, it->second.head_hash, it->second.line);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void AppendRaw(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::app) << bytes;
}

TEST(IncidentLog, MissingLogIsAnEmptyHistory) {
  testing::TempDir dir;
  const IncidentHistory history = ReadOrFail(IncidentLog(dir.PathOf("incidents.jsonl")));
  EXPECT_EQ(history.incidents, 0u);
  EXPECT_TRUE(history.fired.empty());
  EXPECT_TRUE(history.rule_last_opened.empty());
}

TEST(IncidentLog, AppendWritesOneLinePerIncident) {
  testing::TempDir dir;
  IncidentLog log(dir.PathOf("incidents.jsonl"));
  ASSERT_TRUE(log.Append(MakeIncident("one", kOpened, {"a"})).ok());
  ASSERT_TRUE(log.Append(MakeIncident("two", kOpened, {"b"})).ok());
  std::ifstream in(log.path());
  std::string line;
  std::vector<std::string> ids;
  while (std::getline(in, line)) {
    ids.push_back(json::parse(line).at("id").get<std::string>());
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"one", "two"}));
}

TEST(IncidentLog, HistoryCountsIncidentsAndTheLastOpeningOfEachRule) {
  testing::TempDir dir;
  IncidentLog log(dir.PathOf("incidents.jsonl"));
  const WallTime later = kOpened + std::chrono::minutes(7);
  ASSERT_TRUE(log.Append(MakeIncident("1", kOpened, {"a", "b"})).ok());
  ASSERT_TRUE(log.Append(MakeIncident("2", later, {"a"})).ok());
  // Appended last but opened first (two sources settling out of order): the latest wins.
  ASSERT_TRUE(log.Append(MakeIncident("3", kOpened - std::chrono::hours(1), {"a", "c"})).ok());

  const IncidentHistory history = ReadOrFail(log);
  EXPECT_EQ(history.incidents, 3u);
  EXPECT_EQ(history.rule_last_opened,
            (std::map<std::string, WallTime>{
                {"a", later}, {"b", kOpened}, {"c", kOpened - std::chrono::hours(1)}}));
}

TEST(IncidentLog, HistoryKnowsHowFarEachFileFiredByFingerprint) {
  testing::TempDir dir;
  IncidentLog log(dir.PathOf("incidents.jsonl"));
  Firing kmsg = FileFiring("", 0, 0, 999);  // not a file: no entry
  kmsg.stream = "kmsg";
  ASSERT_TRUE(log.Append(MakeIncident("1", kOpened, {"py.traceback"},
                                      {FileFiring("8:1", 256, 77, 10),
                                       // a traceback at 12 whose exception is on line 30
                                       FileFiring("8:1", 256, 77, 12, 30), kmsg}))
                  .ok());
  ASSERT_TRUE(
      log.Append(MakeIncident("2", kOpened, {"py.traceback"},
                              {FileFiring("8:1", 256, 77, 25),
                               // the inode reused by another file
                               FileFiring("8:1", 40, 5, 3), FileFiring("8:2", 256, 77, 4, 6)}))
          .ok());

  const IncidentHistory history = ReadOrFail(log);
  EXPECT_EQ(history.fired.size(), 3u);
  EXPECT_EQ(FiredOf(history, "8:1"), (std::vector<Fired>{{40, 5, 3}, {256, 77, 30}}));
  EXPECT_EQ(FiredOf(history, "8:2"), (std::vector<Fired>{{256, 77, 6}}));
  EXPECT_EQ(history.fired.count(""), 0u);
}

TEST(IncidentLog, AnUnfinishedLastLineIsIgnored) {
  testing::TempDir dir;
  IncidentLog log(dir.PathOf("incidents.jsonl"));
  ASSERT_TRUE(log.Append(MakeIncident("1", kOpened, {"a"}, {FileFiring("8:1", 1, 2, 5)})).ok());
  // A crash mid-append: a record without its '\n' (whole here, so that only the missing
  // newline can be the reason it is left out).
  AppendRaw(log.path(), IncidentJson(MakeIncident("torn", kOpened, {"torn.rule"},
                                                  {FileFiring("8:9", 1, 2, 50)})));

  const IncidentHistory history = ReadOrFail(log);
  EXPECT_EQ(history.incidents, 1u);
  EXPECT_EQ(history.rule_last_opened.count("torn.rule"), 0u);
  EXPECT_EQ(history.fired.count("8:9"), 0u);
  EXPECT_EQ(FiredOf(history, "8:1"), (std::vector<Fired>{{1, 2, 5}}));
}

TEST(IncidentLog, ALineThatIsNotAnObjectIsSkipped) {
  testing::TempDir dir;
  IncidentLog log(dir.PathOf("incidents.jsonl"));
  ASSERT_TRUE(log.Append(MakeIncident("1", kOpened, {"a"})).ok());
  AppendRaw(log.path(), "{\"id\": \"broken\", \"rules\": [\"x\"\n[1, 2]\n\n");
  ASSERT_TRUE(log.Append(MakeIncident("2", kOpened, {"b"})).ok());

  const IncidentHistory history = ReadOrFail(log);
  EXPECT_EQ(history.incidents, 2u);
  EXPECT_EQ(history.rule_last_opened.size(), 2u);
  EXPECT_EQ(history.rule_last_opened.count("x"), 0u);
}

// Found by tests/fuzz/incident_log_fuzz: an "opened_ms" beyond the nanosecond clock overflowed
// (UB), and a field of the wrong type threw out of ReadHistory, stopping the daemon's start.
TEST(IncidentLog, WildOrMistypedFieldsAreReadAsAbsent) {
  testing::TempDir dir;
  IncidentLog log(dir.PathOf("incidents.jsonl"));
  AppendRaw(log.path(),
            "{\"opened_ms\":170000000000000000,\"rules\":[\"big\"],\"firings\":[]}\n"
            "{\"opened_ms\":\"soon\",\"rules\":[\"typed\"],\"firings\":[{\"file_id\":\"8:1\","
            "\"head_bytes\":\"x\",\"head_hash\":-1,\"line\":[5],\"summary_line\":7},3,"
            "{\"file_id\":9}]}\n");
  ASSERT_TRUE(log.Append(MakeIncident("ok", kOpened, {"a"}, {FileFiring("8:2", 1, 2, 5)})).ok());

  const IncidentHistory history = ReadOrFail(log);
  EXPECT_EQ(history.incidents, 3u);
  EXPECT_EQ(history.rule_last_opened.at("big"), WallTime{});
  EXPECT_EQ(history.rule_last_opened.at("typed"), WallTime{});
  EXPECT_EQ(history.rule_last_opened.at("a"), kOpened);
  EXPECT_EQ(FiredOf(history, "8:1"), (std::vector<Fired>{{0, 0, 7}}));
  EXPECT_EQ(FiredOf(history, "8:2"), (std::vector<Fired>{{1, 2, 5}}));
  EXPECT_EQ(history.fired.size(), 2u);
}

TEST(IncidentLog, AnIncidentAppendedAfterATornLineIsStillRead) {
  testing::TempDir dir;
  IncidentLog log(dir.PathOf("incidents.jsonl"));
  ASSERT_TRUE(log.Append(MakeIncident("1", kOpened, {"a"})).ok());
  const std::string whole = IncidentJson(MakeIncident("torn", kOpened, {"torn.rule"}));
  AppendRaw(log.path(), whole.substr(0, whole.size() / 2));
  ASSERT_TRUE(
      log.Append(MakeIncident("3", kOpened, {"after.crash"}, {FileFiring("8:1", 256, 77, 40)}))
          .ok());

  const IncidentHistory history = ReadOrFail(log);
  EXPECT_EQ(history.incidents, 2u);
  EXPECT_EQ(history.rule_last_opened.count("after.crash"), 1u);
  EXPECT_EQ(FiredOf(history, "8:1"), (std::vector<Fired>{{256, 77, 40}}));
}

// A log bigger than kTailBytes: a first line for an old rule and an old file, fillers of
// kFillerBytes, and a last line for a new rule sized so that the lines after the first make
// kTailBytes + `overlap`: the tail then begins `overlap` bytes into the first filler.
struct BigLog {
  std::vector<std::string> lines;  // each with its '\n'
  std::uint64_t size = 0;
};

constexpr std::size_t kFillerBytes = 8000;

std::string Padded(Incident incident, std::size_t bytes) {
  incident.summary.clear();
  const std::size_t bare = IncidentJson(incident).size() + 1;
  EXPECT_LE(bare, bytes);
  incident.summary = std::string(bytes - bare, 'x');
  return IncidentJson(incident) + "\n";
}

BigLog MakeBigLog(std::size_t overlap) {
  BigLog log;
  log.lines.push_back(
      Padded(MakeIncident("old", kOpened, {"old.rule"}, {FileFiring("1:1", 256, 9, 1000)}), 5000));
  std::uint64_t fillers = 0;
  for (int i = 0; fillers + kFillerBytes + 1000 <= IncidentLog::kTailBytes; ++i) {
    log.lines.push_back(
        Padded(MakeIncident("mid" + std::to_string(i), kOpened, {"mid.rule"}), kFillerBytes));
    fillers += kFillerBytes;
  }
  log.lines.push_back(Padded(MakeIncident("new", kOpened, {"new.rule"}),
                             IncidentLog::kTailBytes - fillers + overlap));
  for (const std::string& line : log.lines) {
    log.size += line.size();
  }
  return log;
}

void WriteLog(const std::string& path, const BigLog& log) {
  std::ofstream out(path, std::ios::binary);
  for (const std::string& line : log.lines) {
    out << line;
  }
}

TEST(IncidentLog, ABigLogIsReadFromItsTailSkippingThePartialFirstLine) {
  const BigLog big = MakeBigLog(/*overlap=*/100);
  ASSERT_EQ(big.size, 5000 + IncidentLog::kTailBytes + 100);  // the tail begins at 5100

  testing::TempDir dir;
  IncidentLog log(dir.PathOf("incidents.jsonl"));
  WriteLog(log.path(), big);
  const IncidentHistory history = ReadOrFail(log);
  // Neither the first line nor the first filler (cut at its byte 100) is read.
  EXPECT_EQ(history.incidents, big.lines.size() - 2);
  EXPECT_GT(history.incidents, 500u);
  EXPECT_EQ(history.rule_last_opened.count("old.rule"), 0u);
  EXPECT_EQ(history.rule_last_opened.count("mid.rule"), 1u);
  EXPECT_EQ(history.rule_last_opened.count("new.rule"), 1u);
  EXPECT_EQ(history.fired.count("1:1"), 0u);
}

TEST(IncidentLog, ATailThatBeginsExactlyAtALineKeepsThatLine) {
  const BigLog big = MakeBigLog(/*overlap=*/0);
  ASSERT_EQ(big.size, 5000 + IncidentLog::kTailBytes);  // the tail begins at the first filler

  testing::TempDir dir;
  IncidentLog log(dir.PathOf("incidents.jsonl"));
  WriteLog(log.path(), big);
  const IncidentHistory history = ReadOrFail(log);
  EXPECT_EQ(history.incidents, big.lines.size() - 1);
}

// The bound: an append past kMaxBytes trims the file to its last kTailBytes, from a line
// start, and what ReadHistory needs (the recent incidents) is still there.
TEST(IncidentLog, AnAppendPastTheBoundTrimsTheLogToItsTailOfWholeLines) {
  testing::TempDir dir;
  IncidentLog log(dir.PathOf("incidents.jsonl"));
  ASSERT_TRUE(log.Append(MakeIncident("first", kOpened, {"old.rule"})).ok());
  {
    // Bundle records (not incidents) up to just below the bound, 1,000 bytes a line.
    const std::string filler = "{\"bundle_for\":\"x\",\"pad\":\"" + std::string(970, 'p') + "\"}\n";
    const std::size_t lines =
        (IncidentLog::kMaxBytes - 1500 - std::filesystem::file_size(log.path())) / filler.size();
    std::ofstream out(log.path(), std::ios::app);
    for (std::size_t i = 0; i < lines; ++i) {
      out << filler;
    }
  }
  ASSERT_TRUE(log.Append(MakeIncident("recent", kOpened, {"mid.rule"})).ok());
  EXPECT_GT(std::filesystem::file_size(log.path()), IncidentLog::kMaxBytes - 3000);
  int appends = 0;
  while (std::filesystem::file_size(log.path()) > IncidentLog::kTailBytes + 1000 && appends < 20) {
    ASSERT_TRUE(log.Append(MakeIncident("last", kOpened, {"new.rule"})).ok());
    ++appends;
  }
  EXPECT_LT(appends, 20) << "never trimmed";
  const auto size = std::filesystem::file_size(log.path());
  EXPECT_LE(size, IncidentLog::kTailBytes);  // the tail from a line start
  EXPECT_GT(size, IncidentLog::kTailBytes - 2000);
  std::ifstream in(log.path());
  std::string line;
  std::size_t lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    EXPECT_TRUE(json::parse(line, nullptr, false).is_object()) << "line " << lines;
  }
  const IncidentHistory history = ReadOrFail(log);
  EXPECT_EQ(history.rule_last_opened.count("old.rule"), 0u);  // trimmed away
  EXPECT_EQ(history.rule_last_opened.count("mid.rule"), 1u);
  EXPECT_EQ(history.rule_last_opened.count("new.rule"), 1u);
}

TEST(IncidentJson, HasTheDocumentedFields) {
  Incident incident =
      MakeIncident("20240102T030405Z-abcd01", kOpened, {"py.traceback", "kmsg.oom"});
  incident.kind = rules::RuleKind::kDevice;
  incident.summary = "RuntimeError: boom";
  incident.closed = kOpened + milliseconds(2500);
  Firing traceback = FileFiring("2049:77", 256, 18446744073709551615ull, 12, 30);
  traceback.context = {"step 10", "step 11"};
  Firing kernel;
  kernel.event.rule_id = "kmsg.oom";
  kernel.event.kind = rules::RuleKind::kDevice;
  kernel.event.line = 4;
  kernel.event.text = "Out of memory: Killed process 1234 (python)";
  kernel.event.cut = true;
  kernel.source = "kernel";
  kernel.stream = "kmsg";
  kernel.time = kOpened + milliseconds(1);
  incident.firings = {traceback, kernel};

  const json record = json::parse(IncidentJson(incident));
  EXPECT_EQ(record.at("id"), "20240102T030405Z-abcd01");
  EXPECT_EQ(record.at("kind"), "device");
  EXPECT_EQ(record.at("summary"), "RuntimeError: boom");
  EXPECT_EQ(record.at("rules"), json({"py.traceback", "kmsg.oom"}));
  EXPECT_EQ(record.at("opened"), "2024-01-02T03:04:05.678Z");
  EXPECT_EQ(record.at("closed"), "2024-01-02T03:04:08.178Z");
  EXPECT_EQ(record.at("opened_ms"), 1704164645678);
  EXPECT_FALSE(record.contains("reason"));
  EXPECT_FALSE(record.contains("more_firings"));
  ASSERT_EQ(record.at("firings").size(), 2u);

  const json& file = record.at("firings")[0];
  EXPECT_EQ(file.at("rule"), "py.traceback");
  EXPECT_EQ(file.at("kind"), "crash");
  EXPECT_EQ(file.at("source"), "train");
  EXPECT_EQ(file.at("stream"), "/logs/train.log");
  EXPECT_EQ(file.at("line"), 12);
  EXPECT_EQ(file.at("text"), "Traceback (most recent call last):");
  EXPECT_EQ(file.at("time"), "2024-01-02T03:04:05.678Z");
  EXPECT_EQ(file.at("context"), json({"step 10", "step 11"}));
  EXPECT_EQ(file.at("summary"), "RuntimeError: boom");
  EXPECT_EQ(file.at("summary_line"), 30);
  EXPECT_EQ(file.at("file_id"), "2049:77");
  EXPECT_EQ(file.at("head_bytes"), 256);
  EXPECT_EQ(file.at("head_hash").get<std::uint64_t>(), 18446744073709551615ull);
  EXPECT_FALSE(file.contains("cut"));

  const json& other = record.at("firings")[1];
  EXPECT_EQ(other.at("rule"), "kmsg.oom");
  EXPECT_EQ(other.at("kind"), "device");
  EXPECT_EQ(other.at("stream"), "kmsg");
  EXPECT_EQ(other.at("line"), 4);
  EXPECT_EQ(other.at("time"), "2024-01-02T03:04:05.679Z");
  EXPECT_EQ(other.at("context"), json::array());
  EXPECT_EQ(other.at("cut"), true);
  for (const char* absent : {"summary", "summary_line", "file_id", "head_bytes", "head_hash"}) {
    EXPECT_FALSE(other.contains(absent)) << absent;
  }
}

TEST(IncidentJson, ManualReasonAndExtraFiringsAppearOnlyWhenSet) {
  Incident incident = MakeIncident("m", kOpened, {"manual.snapshot"});
  incident.reason = "loss spiked";
  incident.more_firings = 17;
  const json record = json::parse(IncidentJson(incident));
  EXPECT_EQ(record.at("reason"), "loss spiked");
  EXPECT_EQ(record.at("more_firings"), 17);
  EXPECT_EQ(record.at("firings"), json::array());
}

TEST(IncidentJson, IsOneLineEvenWithNewlinesAndInvalidUtf8InTheText) {
  Firing firing = FileFiring("8:1", 1, 2, 3);
  firing.event.text = "bad \xff\xfe bytes\nand a newline";
  const std::string text = IncidentJson(MakeIncident("x", kOpened, {"py.traceback"}, {firing}));
  EXPECT_EQ(text.find('\n'), std::string::npos);
  const json record = json::parse(text);  // valid UTF-8 JSON
  EXPECT_EQ(record.at("firings")[0].at("text"),
            "bad \xef\xbf\xbd\xef\xbf\xbd bytes\nand a newline");
}

}  // namespace
}  // namespace trainwatch::ops
