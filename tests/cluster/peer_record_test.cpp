#include "cluster/peer_record.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "support/temp_dir.h"

namespace trainwatch::cluster {
namespace {

TEST(PeerRecord, AnIncidentsRecordReadsBackWhole) {
  detect::Incident incident;
  incident.id = "20261125T091200Z-ab12000001";
  incident.kind = rules::RuleKind::kCrash;
  incident.summary = "RuntimeError: NCCL error";
  incident.verdict.verdict = {rules::Cause::kApplication, rules::Action::kInspect};
  incident.verdict.why = "python.traceback (application)";
  incident.fingerprint = "0123456789abcdef";
  incident.opened = detect::WallTime(std::chrono::milliseconds(1764061920000));
  incident.job = {"llama-7", "TORCHELASTIC_RUN_ID", "gpu-17", "hostname", 1, {2, 3}, {}, "", ""};
  detect::Firing warning;
  warning.event.kind = rules::RuleKind::kWarning;
  warning.event.text = "[rank0]: UserWarning: deprecated";
  detect::Firing crash;
  crash.event.kind = rules::RuleKind::kCrash;
  crash.event.text = "[rank3]: Traceback (most recent call last):";
  incident.firings = {warning, crash};

  PeerRecord record = PeerRecordOf(incident);
  EXPECT_EQ(record.first_rank, 3) << "the first alarm's rank, not the warning's";
  record.bundle = "/var/lib/trainwatch/bundles/x.tar.zst";
  record.suspects.push_back({3, "rank 3", "the first to print an error"});
  record.published_ms = 1764061925000;
  const Result<PeerRecord> back = ParsePeerRecord(PeerRecordJson(record));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->job_id, "llama-7");
  EXPECT_EQ(back->node, "gpu-17");
  EXPECT_EQ(back->node_rank, 1);
  EXPECT_EQ(back->ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(back->incident_id, incident.id);
  EXPECT_EQ(back->kind, "crash");
  EXPECT_EQ(back->cause, "application");
  EXPECT_EQ(back->opened_ms, 1764061920000);
  EXPECT_EQ(back->first_rank, 3);
  EXPECT_EQ(back->bundle, record.bundle);
  ASSERT_EQ(back->suspects.size(), 1u);
  EXPECT_EQ(back->suspects[0].reason, "the first to print an error");
  EXPECT_EQ(back->published_ms, 1764061925000);
}

TEST(PeerRecord, ASlowIncidentsStragglerAndItsRanksWaitsReadBack) {
  detect::Incident incident;
  incident.id = "20261125T091200Z-ab12000002";
  incident.kind = rules::RuleKind::kSlow;
  incident.job = {"llama-7", "TORCHELASTIC_RUN_ID", "gpu-17", "hostname", 0, {0, 1}, {}, "", ""};
  detect::Firing report;
  report.event.kind = rules::RuleKind::kSlow;
  report.event.rank = 5;  // the rank the job's own report names
  incident.firings = {report};
  PeerRecord record = PeerRecordOf(incident);
  EXPECT_EQ(record.straggler_rank, 5);
  EXPECT_FALSE(record.first_rank);
  record.waiting = diagnose::NodeWaits{300, 81, 2};
  const Result<PeerRecord> back = ParsePeerRecord(PeerRecordJson(record));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->straggler_rank, 5);
  ASSERT_TRUE(back->waiting);
  EXPECT_EQ(back->waiting->samples, 300);
  EXPECT_EQ(back->waiting->peer_waits, 81);
  EXPECT_EQ(back->waiting->ranks, 2);
  record.waiting.reset();
  EXPECT_FALSE(ParsePeerRecord(PeerRecordJson(record))->waiting);
}

TEST(PeerRecord, WhatIsNotAWholeRecordSaysWhy) {
  EXPECT_NE(ParsePeerRecord("{\"version\": 1, \"job_id\"").error().message.find("not a JSON"),
            std::string::npos);
  EXPECT_NE(ParsePeerRecord("{\"version\": 2}").error().message.find("version 2, not 1"),
            std::string::npos);
  EXPECT_NE(ParsePeerRecord("{\"version\": 1, \"node\": \"n\"}").error().message.find("no job_id"),
            std::string::npos);
}

TEST(PeerRecord, ARecordPastTheSchemasLimitsIsRefused) {
  const std::string head = R"({"version": 1, "job_id": "j", "node": "n", "incident_id": "i")";
  EXPECT_TRUE(ParsePeerRecord(head + "}").ok());
  const auto refused = [&](const std::string& rest) {
    Result<PeerRecord> record = ParsePeerRecord(head + rest + "}");
    return record.ok() ? std::string("accepted") : record.error().message;
  };
  EXPECT_NE(refused(R"(, "summary": ")" + std::string(5000, 'x') + "\"").find("over its limit"),
            std::string::npos);
  EXPECT_NE(refused(R"(, "ranks": [1, -3])").find("not a rank"), std::string::npos);
  EXPECT_NE(refused(R"(, "ranks": [1, "x"])").find("not a rank"), std::string::npos);
  EXPECT_NE(refused(R"(, "node_rank": 99999999)").find("out of range"), std::string::npos);
  EXPECT_NE(
      refused(R"(, "waiting": {"samples": 10, "peer_waits": 11, "ranks": 1})").find("waiting"),
      std::string::npos);
  EXPECT_NE(refused(R"(, "waiting": {"samples": 0, "peer_waits": 0, "ranks": 1})").find("range"),
            std::string::npos);
  EXPECT_NE(refused(R"(, "straggler_rank": -1)").find("out of range"), std::string::npos);
  std::string suspects = R"(, "suspects": [)";
  for (int i = 0; i < 65; ++i) {
    suspects += std::string(i == 0 ? "" : ",") + R"({"label": "x"})";
  }
  EXPECT_NE(refused(suspects + "]").find("suspects"), std::string::npos);
  EXPECT_NE(
      ParsePeerRecord(R"({"version": ")" + std::string(100000, '9') + "\"}").error().message.size(),
      0u);
  EXPECT_LT(
      ParsePeerRecord(R"({"version": ")" + std::string(100000, '9') + "\"}").error().message.size(),
      100u);  // never the whole value
}

TEST(PeerRecord, TheJobsUidTravelsWithTheRecord) {
  detect::Incident incident;
  incident.id = "i";
  incident.job.id = "llama";
  incident.job.node = "gpu-1";
  incident.job.uid = 1000;
  const PeerRecord record = PeerRecordOf(incident);
  EXPECT_EQ(record.uid, 1000);
  Result<PeerRecord> back = ParsePeerRecord(PeerRecordJson(record));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->uid, 1000);
  EXPECT_FALSE(ParsePeerRecord(
                   R"({"version": 1, "job_id": "j", "node": "n", "incident_id": "i", "uid": -1})")
                   .ok());
}

TEST(PeerRecord, TextsHaveTheirEscapesMadeVisible) {
  Result<PeerRecord> record = ParsePeerRecord(
      R"({"version": 1, "job_id": "j", "node": "n\u001b[2J", "incident_id": "i",)"
      R"( "summary": "boom\u001b]0;owned\u0007", "suspects": [{"reason": "\u009b2J"}]})");
  ASSERT_TRUE(record.ok()) << record.error().message;
  EXPECT_EQ(record->node, "n\\x1b[2J");
  EXPECT_EQ(record->summary, "boom\\x1b]0;owned\\x07");
  EXPECT_EQ(record->suspects.at(0).reason, "\\x9b2J");
}

TEST(PeerRecord, NamesAreSafeFileNames) {
  EXPECT_EQ(JobDirName("10.0.0.1:29500"), "10.0.0.1_29500");
  EXPECT_EQ(JobDirName("../etc"), ".._etc");
  EXPECT_EQ(JobDirName(".."), "_..");
  EXPECT_EQ(JobDirName(""), "_");
  EXPECT_EQ(JobDirName(std::string(300, 'a')).size(), 128u);
  EXPECT_EQ(PeerFileName("20261125T091200Z-ab1", "gpu 17/a"), "20261125T091200Z-ab1@gpu_17_a.json");
  EXPECT_EQ(OwnFileSuffix("gpu 17/a"), "@gpu_17_a.json");
  EXPECT_TRUE(IsPeerFileName("x@gpu-17.json"));
  EXPECT_FALSE(IsPeerFileName("x@gpu-17.json.tmp"));
  EXPECT_FALSE(IsPeerFileName(".x@gpu-17.json"));
  EXPECT_FALSE(IsPeerFileName("notes.json"));
}

// The file on the shared directory is anyone's who can write there: a link, a FIFO or a huge
// file is refused by what it is, each next to a whole record that would otherwise be read.
TEST(PeerRecord, AFileOnTheSharedDirectoryIsReadOnlyWhenItIsAPlainSmallFile) {
  testing::TempDir dir;
  PeerRecord record;
  record.job_id = "jobA";
  record.node = "gpu-1";
  record.incident_id = "20261125T091200Z-ab12000001";
  record.kind = "crash";
  record.uid = 1000;
  const std::string text = PeerRecordJson(record);
  const std::string real = dir.PathOf("real@gpu-1.json");
  std::ofstream(real) << text;
  ASSERT_TRUE(ReadPeerRecordFile(real)) << "the control: a whole record reads";

  const std::string link = dir.PathOf("link@gpu-1.json");
  ASSERT_EQ(::symlink(real.c_str(), link.c_str()), 0);
  Result<PeerRecord> linked = ReadPeerRecordFile(link);
  ASSERT_FALSE(linked) << "a link to a whole record is not followed";
  EXPECT_NE(linked.error().message.find("symbolic link"), std::string::npos)
      << linked.error().message;

  const std::string fifo = dir.PathOf("fifo@gpu-1.json");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Result<PeerRecord> piped = ReadPeerRecordFile(fifo);  // returns: never blocks on it
  ASSERT_FALSE(piped);
  EXPECT_NE(piped.error().message.find("is a FIFO"), std::string::npos) << piped.error().message;

  const std::string huge = dir.PathOf("huge@gpu-1.json");
  std::ofstream(huge) << text << std::string(kMaxPeerRecordBytes, ' ');  // still valid JSON
  Result<PeerRecord> big = ReadPeerRecordFile(huge);
  ASSERT_FALSE(big);
  EXPECT_NE(big.error().message.find("over the cap"), std::string::npos) << big.error().message;
}

}  // namespace
}  // namespace trainwatch::cluster
