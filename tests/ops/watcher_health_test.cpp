// Where the watcher is blind, from a snapshot built by hand: each reason, and the quiet cases
// that are not blindness (a silent job, a backlog being read, a rotated file).
#include "ops/watcher_health.h"

#include <gtest/gtest.h>

#include "ops/daemon_metrics.h"
#include "ops/prometheus_text.h"
#include "ops/status_json.h"

namespace trainwatch::ops {
namespace {

StreamSnapshot File(std::string name, std::uint64_t offset, std::optional<std::uint64_t> size,
                    std::int64_t quiet_seconds) {
  StreamSnapshot file;
  file.name = std::move(name);
  file.offset = offset;
  file.read_offset = offset;
  file.size = size;
  file.seconds_since_output = quiet_seconds;
  return file;
}

DaemonSnapshot Watching(std::vector<StreamSnapshot> files) {
  DaemonSnapshot snapshot;
  SourceSnapshot train;
  train.name = "train";
  train.files = std::move(files);
  snapshot.sources.push_back(std::move(train));
  return snapshot;
}

TEST(BlindSpots, NoneWhileEveryPartWatches) {
  // A job silent for an hour (its file read to the end), a backlog read a second ago, a file
  // read in turn (no size known): the job's matters, not the watcher's.
  EXPECT_TRUE(BlindSpots(Watching({File("/logs/quiet.log", 500, 500, 3600),
                                   File("/logs/backlog.log", 100, 1 << 20, 1),
                                   File("/logs/in_turn.log", 100, std::nullopt, 3600)}))
                  .empty());
}

TEST(BlindSpots, AnUnfinishedLastLineIsReadNotBlind) {
  // A tqdm bar stalled mid-line: read to the end, its line not yet ended (offset, where a
  // restart resumes, stops before it).
  StreamSnapshot bar = File("/logs/tqdm.log", 4000, 4096, 3600);
  bar.read_offset = 4096;
  EXPECT_TRUE(BlindSpots(Watching({bar})).empty());
}

TEST(BlindSpots, AFileWrittenAndNotReadForAMinuteIsBlind) {
  StreamSnapshot rotated = File("/logs/rank0.log.1", 100, 200, 600);
  rotated.gone = true;  // renamed away, being finished: not watched for new lines
  const std::vector<BlindSpot> spots =
      BlindSpots(Watching({File("/logs/rank0.log", 4096, 9000, kUnreadFileSeconds), rotated}));
  ASSERT_EQ(spots.size(), 1U);
  EXPECT_EQ(spots[0].reason, kBlindUnreadFile);
  EXPECT_EQ(spots[0].what, "/logs/rank0.log");
  EXPECT_EQ(spots[0].why, "4904 bytes written and not read, no line read for 60 s (source train)");
  EXPECT_TRUE(
      BlindSpots(Watching({File("/logs/rank0.log", 4096, 9000, kUnreadFileSeconds - 1)})).empty());
}

TEST(BlindSpots, TheKernelLogAStuckWorkerAStalledProcessWatchAndASlowLoop) {
  DaemonSnapshot snapshot;
  SourceSnapshot kmsg;
  kmsg.name = "kernel";
  kmsg.kmsg_running = false;
  snapshot.sources.push_back(kmsg);
  snapshot.oldest_work_seconds = kWorkerStuckSeconds;
  snapshot.process_watch_stalled_seconds = 75;
  snapshot.loop_lag_seconds = 2.5;
  const std::vector<BlindSpot> spots = BlindSpots(snapshot);
  ASSERT_EQ(spots.size(), 4U);
  EXPECT_EQ(spots[0].reason, kBlindKmsgNotRead);
  EXPECT_EQ(spots[1].reason, kBlindWorkerStuck);
  EXPECT_EQ(spots[2].reason, kBlindProcessWatchStalled);
  EXPECT_NE(spots[2].why.find("75 s"), std::string::npos) << spots[2].why;
  EXPECT_EQ(spots[3].reason, kBlindLoopSlow);
  EXPECT_NE(spots[3].why.find("2500 ms"), std::string::npos) << spots[3].why;

  snapshot.sources.clear();
  snapshot.oldest_work_seconds = kWorkerStuckSeconds - 1;
  snapshot.process_watch_stalled_seconds.reset();
  snapshot.loop_lag_seconds = 0.3;
  EXPECT_TRUE(BlindSpots(snapshot).empty());
}

TEST(BlindSpots, StatusAndMetricsShowThem) {
  DaemonSnapshot snapshot = Watching({File("/logs/rank0.log", 10, 20, 120)});
  snapshot.loop_lag_seconds = 0.25;
  const nlohmann::json status = StatusJson(snapshot);
  EXPECT_EQ(status["health"]["watching"], false) << status["health"].dump();
  ASSERT_EQ(status["health"]["blind"].size(), 1U);
  EXPECT_EQ(status["health"]["blind"][0]["reason"], "unread_file");
  EXPECT_EQ(status["health"]["loop_lag_ms"], 250);

  const std::string text = PrometheusText(DaemonMetricFamilies(snapshot));
  for (const char* line : {"trainwatch_blind_spots{reason=\"unread_file\"} 1\n",
                           "trainwatch_blind_spots{reason=\"loop_slow\"} 0\n",
                           "trainwatch_blind_spots{reason=\"process_watch_stalled\"} 0\n",
                           "trainwatch_loop_lag_seconds 0.25\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "in:\n" << text;
  }
  EXPECT_EQ(StatusJson(DaemonSnapshot{})["health"]["watching"], true);
}

}  // namespace
}  // namespace trainwatch::ops
