// The daemon's life around its captures and its state_dir, with the real binary: SIGTERM while
// a slow collector runs (the capture finishes within stop_grace, or is recorded as interrupted
// and reported at the next start), and the state_dir deleted under a running daemon (restored
// with its lock and socket, a second daemon still refused, no incident record lost).
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include "integration/daemon_fixture.h"
#include "support/file_text.h"
#include "support/run_binary.h"

namespace trainwatch::testing {
namespace {

namespace fs = std::filesystem;

std::string SlowCapture(const std::string& sleep, const std::string& grace) {
  return "capture:\n  stop_grace: " + grace +
         "\n  habana_logs: none\n  commands:\n"
         "    - {name: slow, argv: [sleep, '" +
         sleep + "'], as: slow.txt, timeout: 60s}\n";
}

TEST_F(DaemonTest, SigtermMidCaptureIsRecordedAndReportedAtNextStart) {
  // Stopped well within the second the early bundle waits for the tools: no bundle at all.
  WriteConfig({.settle = "100ms", .capture = SlowCapture("30", "200ms")});
  StartDaemon();
  Append(Dir("logs/job.log"), "MARK 1 FIRE\n");
  ASSERT_TRUE(WaitUntil([&] { return IncidentsOf("test.marker").size() == 1; }, 10s))
      << daemon_->Log();
  const std::string id = IncidentsOf("test.marker")[0]["id"];
  std::this_thread::sleep_for(100ms);  // the collectors are under way (well before 1 s)
  const auto start = std::chrono::steady_clock::now();
  daemon_->Signal(SIGTERM);
  EXPECT_EQ(daemon_->Wait(10s), 0) << daemon_->Log();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);  // stop_grace, then abandoned
  const std::string log = daemon_->Log();
  EXPECT_NE(log.find("finishing the capture of incident " + id), std::string::npos) << log;
  EXPECT_NE(log.find("incident " + id + ": no bundle: interrupted"), std::string::npos) << log;
  std::vector<Json> records = BundleRecords();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0]["bundle_for"], id);
  EXPECT_TRUE(records[0]["bundle"].is_null());
  EXPECT_EQ(records[0]["error"].get<std::string>().rfind("interrupted", 0), 0u);

  // The next start says so, once.
  for (const char* name : {"second.log", "third.log"}) {
    DaemonProcess again({"daemon", "--config", config()}, Dir(name));
    ASSERT_TRUE(again.WaitReady(state())) << again.Log();
    again.Signal(SIGTERM);
    EXPECT_EQ(again.Wait(10s), 0) << again.Log();
  }
  EXPECT_NE(ReadFile(Dir("second.log")).find("incident " + id + " (opened"), std::string::npos)
      << ReadFile(Dir("second.log"));
  EXPECT_EQ(ReadFile(Dir("third.log")).find("has no bundle"), std::string::npos)
      << ReadFile(Dir("third.log"));
  records = BundleRecords();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1]["bundle_for"], id);
}

// Stopped after the early bundle (written a second in, the slow tool still at work): that
// is the incident's bundle, recorded as such, and the next start has nothing to report.
TEST_F(DaemonTest, SigtermAfterTheEarlyBundleRecordsIt) {
  WriteConfig({.settle = "100ms", .capture = SlowCapture("30", "2500ms")});
  StartDaemon();
  Append(Dir("logs/job.log"), "MARK 1 FIRE\n");
  ASSERT_TRUE(WaitUntil([&] { return IncidentsOf("test.marker").size() == 1; }, 10s))
      << daemon_->Log();
  const std::string id = IncidentsOf("test.marker")[0]["id"];
  ASSERT_TRUE(
      WaitUntil([&] { return daemon_->Log().find("early bundle") != std::string::npos; }, 10s))
      << daemon_->Log();
  daemon_->Signal(SIGTERM);
  EXPECT_EQ(daemon_->Wait(10s), 0) << daemon_->Log();
  std::vector<Json> records = BundleRecords();
  ASSERT_EQ(records.size(), 1u) << daemon_->Log();
  EXPECT_EQ(records[0]["bundle_for"], id);
  ASSERT_TRUE(records[0]["bundle"].is_string()) << records[0].dump();
  EXPECT_TRUE(fs::exists(records[0]["bundle"].get<std::string>()));
  EXPECT_EQ(records[0]["error"].get<std::string>().rfind("interrupted", 0), 0u);
  EXPECT_NE(records[0]["error"].get<std::string>().find("early bundle"), std::string::npos);

  DaemonProcess again({"daemon", "--config", config()}, Dir("second.log"));
  ASSERT_TRUE(again.WaitReady(state())) << again.Log();
  again.Signal(SIGTERM);
  EXPECT_EQ(again.Wait(10s), 0) << again.Log();
  EXPECT_EQ(again.Log().find("has no bundle"), std::string::npos) << again.Log();
}

TEST_F(DaemonTest, SigtermDuringAShortCaptureLetsItFinish) {
  WriteConfig({.settle = "100ms", .capture = SlowCapture("1", "10s")});
  StartDaemon();
  Append(Dir("logs/job.log"), "MARK 1 FIRE\n");
  ASSERT_TRUE(WaitUntil([&] { return IncidentsOf("test.marker").size() == 1; }, 10s))
      << daemon_->Log();
  daemon_->Signal(SIGTERM);
  EXPECT_EQ(daemon_->Wait(10s), 0) << daemon_->Log();
  EXPECT_NE(daemon_->Log().find("finishing the capture"), std::string::npos) << daemon_->Log();
  const std::vector<Json> records = BundleRecords();
  ASSERT_EQ(records.size(), 1u) << daemon_->Log();
  ASSERT_TRUE(records[0]["bundle"].is_string()) << records[0].dump();
  EXPECT_TRUE(fs::exists(records[0]["bundle"].get<std::string>()));
}

TEST_F(DaemonTest, AStateDirDeletedWhileRunningIsRestoredAndNoIncidentIsLost) {
  WriteConfig({.settle = "100ms", .cooldown = "0s"});
  StartDaemon();
  const std::string log = Dir("logs/job.log");
  Append(log, "MARK 1 FIRE\n");
  ASSERT_TRUE(WaitUntil([&] { return IncidentsOf("test.marker").size() == 1; }, 10s))
      << daemon_->Log();
  fs::remove_all(state());
  Append(log, "MARK 2 FIRE\n");  // within the second before the periodic check
  ASSERT_TRUE(WaitUntil([&] { return IncidentsOf("test.marker").size() == 1; }, 10s))
      << daemon_->Log();
  EXPECT_EQ(IncidentsOf("test.marker")[0]["firings"][0]["line"], 2);
  ASSERT_TRUE(WaitUntil([&] { return !daemon_->Status(state()).is_null(); }, 5s)) << daemon_->Log();
  EXPECT_TRUE(fs::exists(state() + "/lock"));
  ASSERT_TRUE(WaitUntil([&] { return fs::exists(state() + "/offsets.json"); }, 5s));
  EXPECT_NE(daemon_->Log().find("was deleted while running"), std::string::npos) << daemon_->Log();

  DaemonProcess second({"daemon", "--config", config()}, Dir("second.log"));
  EXPECT_EQ(second.Wait(10s), 2) << second.Log();
  EXPECT_NE(second.Log().find("another trainwatch daemon uses state_dir"), std::string::npos)
      << second.Log();
  Append(log, "MARK 3 FIRE\n");
  ASSERT_TRUE(WaitUntil([&] { return IncidentsOf("test.marker").size() == 2; }, 10s))
      << daemon_->Log();
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(IncidentsOf("test.marker").size(), 2u) << "fired once, by one daemon";
}

}  // namespace
}  // namespace trainwatch::testing
