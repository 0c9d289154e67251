// An incident as an Alertmanager alert: its labels, annotations and times, the POST body,
// and the store read back (damaged ones too).
#include "alert/alert.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace trainwatch::alert {
namespace {

using json = nlohmann::json;

detect::Incident CrashOnRank3() {
  detect::Incident incident;
  incident.id = "20261125T100000Z-1";
  incident.kind = rules::RuleKind::kCrash;
  incident.summary = "RuntimeError: boom";
  incident.verdict.verdict = {rules::Cause::kApplication, rules::Action::kCancelRetries};
  incident.verdict.why = "python.traceback (application)";
  incident.fingerprint = "crash:python.traceback:abc";
  incident.job.id = "llama-7";
  incident.job.node = "gpu-17";
  detect::Firing firing;
  firing.event.kind = rules::RuleKind::kCrash;
  firing.event.text = "[rank3]:RuntimeError: boom";
  incident.firings.push_back(firing);
  incident.opened = std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000));
  return incident;
}

TEST(Alert, LabelsIdentifyTheFailureAndAnnotationsTellIt) {
  config::AlertmanagerConfig config;
  config.labels = {{"cluster", "a"}};
  const Alert alert = AlertOf(CrashOnRank3(), config);
  EXPECT_EQ(alert.labels,
            (std::map<std::string, std::string>{{"alertname", "TrainwatchIncident"},
                                                {"job_id", "llama-7"},
                                                {"node", "gpu-17"},
                                                {"rank", "3"},
                                                {"kind", "crash"},
                                                {"severity", "critical"},
                                                {"cause", "application"},
                                                {"action", "cancel_retries"},
                                                {"fingerprint", "crash:python.traceback:abc"},
                                                {"cluster", "a"}}));
  EXPECT_EQ(alert.annotations.at("summary"), "RuntimeError: boom");
  EXPECT_EQ(alert.annotations.at("incident"), "20261125T100000Z-1");
  EXPECT_EQ(alert.annotations.at("first_failing"), "node gpu-17 rank 3");
  EXPECT_EQ(alert.starts_ms, 1'800'000'000'000);

  detect::Incident no_job = CrashOnRank3();
  no_job.job.id.clear();
  no_job.firings[0].event.text = "RuntimeError: boom";
  const Alert bare = AlertOf(no_job, {});
  EXPECT_FALSE(bare.labels.contains("job_id"));  // empty values are no labels
  EXPECT_FALSE(bare.labels.contains("rank"));

  // A slow job, its straggler named by its own report: a warning about that rank.
  detect::Incident slow = CrashOnRank3();
  slow.kind = rules::RuleKind::kSlow;
  slow.firings[0].event.kind = rules::RuleKind::kSlow;
  slow.firings[0].event.rank = 5;
  const Alert warning = AlertOf(slow, {});
  EXPECT_EQ(warning.labels.at("severity"), "warning");
  EXPECT_EQ(warning.labels.at("kind"), "slow");
  EXPECT_EQ(warning.labels.at("rank"), "5");
  EXPECT_EQ(warning.annotations.at("straggler"), "rank 5, the slowest by the job's own report");
  EXPECT_FALSE(warning.annotations.contains("first_failing"));
  config::AlertmanagerConfig routed;
  routed.labels = {{"severity", "page"}};
  EXPECT_EQ(AlertOf(slow, routed).labels.at("severity"), "page") << "the site's own label wins";
}

TEST(Alert, ThePostBodyEndsOpenAlertsLaterAndResolvedOnesAtTheirEnd) {
  Alert open = AlertOf(CrashOnRank3(), {});
  Alert ended = open;
  ended.ends_ms = open.starts_ms + 90'000;
  const json body =
      json::parse(PostBody({&open, &ended}, open.starts_ms + 1000, /*valid_for_ms=*/240'000));
  ASSERT_EQ(body.size(), 2u);
  EXPECT_EQ(body[0]["startsAt"], "2027-01-15T08:00:00.000Z");
  EXPECT_EQ(body[0]["endsAt"], "2027-01-15T08:04:01.000Z");
  EXPECT_EQ(body[1]["endsAt"], "2027-01-15T08:01:30.000Z");
  EXPECT_EQ(body[0]["labels"]["alertname"], "TrainwatchIncident");
}

TEST(Alert, TheStoreReadsBackAndDamageIsSaid) {
  std::map<std::string, Alert> alerts;
  Alert alert = AlertOf(CrashOnRank3(), {});
  alert.ends_ms = 5;
  alert.end_unsent = 2;
  alerts[alert.incident_id] = alert;
  const Result<std::map<std::string, Alert>> back = ParseStore(StoreJson(alerts));
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->size(), 1u);
  const Alert& read = back->begin()->second;
  EXPECT_EQ(read.labels, alert.labels);
  EXPECT_EQ(read.annotations, alert.annotations);
  EXPECT_EQ(read.ends_ms, 5);
  EXPECT_EQ(read.end_unsent, 2u);
  EXPECT_FALSE(ParseStore("{\"version\": 1, \"alerts\": [").ok());
  EXPECT_FALSE(ParseStore("{\"version\": 2}").ok());
  const auto skipped = ParseStore(R"({"version": 1, "alerts": [1, {"incident": 2}, {}]})");
  ASSERT_TRUE(skipped);
  EXPECT_TRUE(skipped->empty());
}

}  // namespace
}  // namespace trainwatch::alert
