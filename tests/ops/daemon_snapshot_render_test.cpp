// StatusJson and DaemonMetricFamilies read only a DaemonSnapshot: built by hand here.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "ops/daemon_metrics.h"
#include "ops/prometheus_text.h"
#include "ops/status_json.h"

namespace trainwatch::ops {
namespace {

using std::chrono::seconds;
using std::chrono::system_clock;

const system_clock::time_point kStart{seconds(1714566896)};

DaemonSnapshot Snapshot() {
  DaemonSnapshot snapshot;
  snapshot.version = "0.1.0";
  snapshot.pid = 42;
  snapshot.config = "/etc/trainwatch/trainwatch.yaml";
  snapshot.state_dir = "/var/lib/trainwatch";
  snapshot.uptime_seconds = 90;
  snapshot.started = kStart;
  snapshot.taken = kStart + std::chrono::minutes(2);
  snapshot.rules = {"python.traceback", "progress.stall"};
  snapshot.incidents_written = 1;
  snapshot.incidents_file = "/var/lib/trainwatch/incidents.jsonl";
  snapshot.last_incident = "20240501T123456Z-0001000001";
  snapshot.counters.firings_by_rule["python.traceback"] = 3;
  snapshot.counters.incidents_by_kind["crash"] = 1;
  snapshot.collectors = {"hl-smi"};
  snapshot.hooks = {"archive"};
  snapshot.hook_counts.runs["archive"] = 1;

  SourceSnapshot train;
  train.name = "train";
  train.tags = {"train"};
  train.paths = {"/logs/**/*.log"};
  train.lines = 100;
  train.bytes = 5000;
  StreamSnapshot live;
  live.name = "/logs/rank0.log";
  live.lines = 100;
  live.offset = 5000;
  live.durable_offset = 4900;
  live.writers = {{4242, "python3", "", "", {}}};
  live.bars.push_back({"tqdm:", "", 41, 100, false, true, 12, kStart + seconds(60)});
  StreamSnapshot rotated = live;
  rotated.name = "/logs/rank0.log.1";
  rotated.gone = true;
  train.files = {live, rotated};
  snapshot.sources.push_back(train);

  SourceSnapshot kmsg;
  kmsg.name = "kernel";
  kmsg.tags = {"kmsg"};
  kmsg.kmsg_running = false;
  StreamSnapshot stream;
  stream.name = "kmsg";
  kmsg.streams = {stream};
  snapshot.sources.push_back(kmsg);
  return snapshot;
}

TEST(StatusJson, SaysWhatTheDaemonWatches) {
  const nlohmann::json status = StatusJson(Snapshot());
  EXPECT_EQ(status["pid"], 42);
  EXPECT_EQ(status["rules"], 2) << "a count, not the ids";
  EXPECT_EQ(status["last_incident"], "20240501T123456Z-0001000001");
  EXPECT_FALSE(status.contains("settling_incident"));
  EXPECT_TRUE(status["open_incidents"].empty());
  EXPECT_FALSE(status.contains("firings_without_incident")) << "only when there are some";
  ASSERT_EQ(status["sources"].size(), 2u);
  const nlohmann::json& train = status["sources"][0];
  ASSERT_EQ(train["files"].size(), 2u);
  const nlohmann::json& file = train["files"][0];
  EXPECT_EQ(file["path"], "/logs/rank0.log");
  EXPECT_EQ(file["offset"], 5000);
  EXPECT_EQ(file["durable_offset"], 4900);
  EXPECT_EQ(file["writers"][0]["pid"], 4242);
  EXPECT_EQ(file["bars"][0]["count"], 41);
  EXPECT_EQ(file["bars"][0]["total"], 100);
  EXPECT_FALSE(file.contains("gone"));
  EXPECT_TRUE(train["files"][1]["gone"]);
  EXPECT_FALSE(train.contains("kmsg")) << "a file source";
  const nlohmann::json& kernel = status["sources"][1];
  EXPECT_EQ(kernel["kmsg"], false);
  EXPECT_EQ(kernel["streams"][0]["name"], "kmsg");
}

TEST(StatusJson, ASettlingIncidentOpenOnesAndQuietFirings) {
  DaemonSnapshot snapshot = Snapshot();
  snapshot.settling_incident =
      SettlingIncidentSnapshot{"id-1", "hang", "bar stalled", {"progress.stall"}};
  snapshot.firings_without_incident["hw.warning"] = 7;
  const nlohmann::json status = StatusJson(snapshot);
  EXPECT_EQ(status["settling_incident"]["kind"], "hang");
  EXPECT_EQ(status["firings_without_incident"]["hw.warning"], 7);
  EXPECT_TRUE(status["open_incidents"].empty());

  snapshot.open_incidents.push_back(
      {"id-0", "crash", std::chrono::system_clock::time_point(std::chrono::seconds(1764064800))});
  const nlohmann::json later = StatusJson(snapshot);
  ASSERT_EQ(later["open_incidents"].size(), 1U);
  EXPECT_EQ(later["open_incidents"][0]["id"], "id-0");
  EXPECT_EQ(later["open_incidents"][0]["opened"], "2025-11-25T10:00:00.000Z");
  const std::string text = PrometheusText(DaemonMetricFamilies(snapshot));
  EXPECT_NE(text.find("trainwatch_open_incidents 1\n"), std::string::npos) << text;
}

TEST(DaemonMetricFamilies, KnownSeriesStartAtZeroAndGoneFilesShowNoBars) {
  const std::string text = PrometheusText(DaemonMetricFamilies(Snapshot()));
  for (const char* line : {
           "trainwatch_rule_firings_total{rule=\"python.traceback\"} 3\n",
           "trainwatch_rule_firings_total{rule=\"progress.stall\"} 0\n",
           "trainwatch_incidents_total{kind=\"crash\"} 1\n",
           "trainwatch_incidents_total{kind=\"manual\"} 0\n",
           "trainwatch_open_incidents 0\n",
           "trainwatch_incidents_resolved_total{how=\"ack\"} 0\n",
           "trainwatch_incidents_resolved_total{how=\"progress\"} 0\n",
           "trainwatch_collector_timeouts_total{collector=\"hl-smi\"} 0\n",
           "trainwatch_hook_runs_total{hook=\"archive\"} 1\n",
           "trainwatch_hook_failures_total{hook=\"archive\"} 0\n",
           "trainwatch_source_files{source=\"train\"} 2\n",
           "trainwatch_source_lines_total{source=\"kernel\"} 0\n",
           "trainwatch_start_time_seconds{version=\"0.1.0\"} 1714566896\n",
           "trainwatch_metrics_written_timestamp_seconds 1714567016\n",
           // NOLINTNEXTLINE(bugprone-suspicious-missing-comma): one line, split at the column limit
           "trainwatch_progress_position{source=\"train\",stream=\"/logs/"
           "rank0.log\",bar=\"tqdm:\"} "
           "41\n",
           "trainwatch_progress_last_advance_timestamp_seconds{source=\"train\",stream=\"/logs/"
           "rank0.log\",bar=\"tqdm:\"} 1714566956\n",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "in:\n" << text;
  }
  EXPECT_EQ(text.find("rank0.log.1"), std::string::npos) << "a rotated file's bars are history";
}

TEST(DaemonMetricFamilies, TheLastLossIsShownNanAndAll) {
  DaemonSnapshot snapshot = Snapshot();
  snapshot.sources[0].files[0].loss =
      detect::LineDetector::LastLoss{std::numeric_limits<double>::quiet_NaN(), 425, "", 3};
  const std::string text = PrometheusText(DaemonMetricFamilies(snapshot));
  EXPECT_NE(
      text.find("trainwatch_training_loss{source=\"train\",stream=\"/logs/rank0.log\"} NaN\n"),
      std::string::npos)
      << text;
  const nlohmann::json status = StatusJson(snapshot);
  const nlohmann::json& loss = status["sources"][0]["files"][0]["loss"];
  EXPECT_EQ(loss["last"], "nan");
  EXPECT_EQ(loss["step"], 425);
  EXPECT_EQ(loss["not_finite_in_a_row"], 3);
}

}  // namespace
}  // namespace trainwatch::ops
