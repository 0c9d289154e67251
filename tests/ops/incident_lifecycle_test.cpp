#include "ops/incident_lifecycle.h"

#include <gtest/gtest.h>

#include "detect/incident_json.h"
#include "ops/incident_log.h"

namespace trainwatch::ops {
namespace {

using std::chrono::seconds;

const SteadyTime kStart = SteadyTime{} + std::chrono::hours(1);
const WallTime kWall = WallTime{} + seconds(1764061920);  // 2025-11-25T09:12:00Z

source::WriterProcess Writer(int pid) { return {pid, "python3", {}, {}, {}, ""}; }

detect::Firing FiringOf(const std::string& rule, const std::string& stream,
                        const std::vector<int>& writers) {
  detect::Firing firing;
  firing.event.rule_id = rule;
  firing.source = "train";
  firing.stream = stream;
  for (int pid : writers) {
    firing.writers.push_back(Writer(pid));
  }
  return firing;
}

detect::Incident IncidentOf(const std::string& id, rules::RuleKind kind,
                            std::vector<detect::Firing> firings) {
  detect::Incident incident;
  incident.id = id;
  incident.kind = kind;
  incident.opened = kWall;
  for (const detect::Firing& firing : firings) {
    incident.rules.push_back(firing.event.rule_id);
  }
  incident.firings = std::move(firings);
  return incident;
}

// A stream of the "train" source as Observe sees it.
struct Stream {
  std::string name = "/logs/train.log";
  std::string source = "train";
  std::optional<detect::Bar> bar;
  SteadyTime last_advance{};
  SteadyTime last_line{};
  SteadyTime first_seen = kStart - seconds(600);
  std::vector<source::WriterProcess> writers;
  bool slow = false;
  SteadyTime last_even_report{};

  StreamActivity Activity() const {
    return {source,   name, bar ? &*bar : nullptr, last_advance, last_line, first_seen,
            &writers, slow, last_even_report};
  }
};

detect::Bar BarAt(std::int64_t count) {
  detect::Bar bar;
  bar.key = "train";
  bar.label = "train";
  bar.count = count;
  bar.total = 100;
  return bar;
}

TEST(IncidentLifecycle, AHangResolvesWhenItsBarAdvancesAgainAndNotBefore) {
  IncidentLifecycle lifecycle;
  lifecycle.Open(IncidentOf("hang-1", rules::RuleKind::kHang,
                            {FiringOf("progress.stall", "/logs/train.log", {100})}),
                 kStart);
  ASSERT_TRUE(lifecycle.any_open());

  Stream stream;
  stream.bar = BarAt(41);
  stream.last_advance = kStart - seconds(60);  // the stall itself
  stream.last_line = kStart + seconds(5);      // tqdm's refresh of the same count, a warning
  stream.writers = {Writer(100)};
  lifecycle.Observe(stream.Activity(), kWall + seconds(5));
  EXPECT_TRUE(lifecycle.TakeResolved().empty()) << "output without an advance is no progress";

  Stream other = stream;
  other.name = "/logs/eval.log";
  other.last_advance = kStart + seconds(10);
  lifecycle.Observe(other.Activity(), kWall + seconds(10));
  EXPECT_TRUE(lifecycle.TakeResolved().empty()) << "another stream's progress";

  stream.bar = BarAt(42);
  stream.last_advance = kStart + seconds(20);
  lifecycle.Observe(stream.Activity(), kWall + seconds(20));
  const std::vector<Resolution> resolved = lifecycle.TakeResolved();
  ASSERT_EQ(resolved.size(), 1U);
  EXPECT_EQ(resolved[0].id, "hang-1");
  EXPECT_EQ(resolved[0].by, ResolvedBy::kProgress);
  EXPECT_EQ(resolved[0].why, "progress resumed on /logs/train.log ('train' at 42/100)");
  EXPECT_EQ(resolved[0].rules, std::vector<std::string>{"progress.stall"});
  EXPECT_EQ(resolved[0].at, kWall + seconds(20));
  EXPECT_FALSE(lifecycle.any_open());
}

// A slow incident the job's own straggler report opened (a spread rule), on a log without a
// bar: it ends when a later report says the ranks are even, not while they are still uneven.
TEST(IncidentLifecycle, ASlowIncidentFromTheJobsReportResolvesWhenAReportSaysEven) {
  IncidentLifecycle lifecycle;
  lifecycle.Open(IncidentOf("slow-1", rules::RuleKind::kSlow,
                            {FiringOf("megatron.straggler", "/logs/train.log", {100})}),
                 kStart);
  Stream stream;
  stream.writers = {Writer(100)};
  stream.last_line = kStart + seconds(60);
  stream.slow = true;  // the reports still uneven
  lifecycle.Observe(stream.Activity(), kWall + seconds(60));
  EXPECT_TRUE(lifecycle.TakeResolved().empty());
  stream.slow = false;
  stream.last_even_report = kStart - seconds(1);  // even, but before it opened
  lifecycle.Observe(stream.Activity(), kWall + seconds(90));
  EXPECT_TRUE(lifecycle.TakeResolved().empty());
  stream.last_even_report = kStart + seconds(120);
  lifecycle.Observe(stream.Activity(), kWall + seconds(120));
  const std::vector<Resolution> resolved = lifecycle.TakeResolved();
  ASSERT_EQ(resolved.size(), 1U);
  EXPECT_EQ(resolved[0].by, ResolvedBy::kProgress);
  EXPECT_EQ(resolved[0].why, "the job's report on /logs/train.log says its ranks are even again");
}

TEST(IncidentLifecycle, ASilenceOnALogWithoutBarsResolvesWhenItWritesAgain) {
  IncidentLifecycle lifecycle;
  lifecycle.Open(IncidentOf("hang-2", rules::RuleKind::kHang,
                            {FiringOf("job.silent", "/logs/train.log", {100})}),
                 kStart);
  Stream stream;
  stream.last_line = kStart + seconds(30);
  lifecycle.Observe(stream.Activity(), kWall + seconds(30));
  const std::vector<Resolution> resolved = lifecycle.TakeResolved();
  ASSERT_EQ(resolved.size(), 1U);
  EXPECT_EQ(resolved[0].why, "progress resumed on /logs/train.log: it writes again");
}

TEST(IncidentLifecycle, AHangALineToldOfIsNotResolvedByTheLinesThatFollowIt) {
  IncidentLifecycle lifecycle;
  detect::Firing watchdog = FiringOf("pytorch.nccl.watchdog_timeout", "/logs/train.log", {100});
  watchdog.event.kind = rules::RuleKind::kHang;
  watchdog.resume_line = 41;  // a line fired, not the clock
  lifecycle.Open(IncidentOf("hang-3", rules::RuleKind::kHang, {watchdog}), kStart);
  Stream stream;
  stream.last_line = kStart + seconds(2);  // the other ranks' watchdog lines
  lifecycle.Observe(stream.Activity(), kWall + seconds(2));
  EXPECT_TRUE(lifecycle.TakeResolved().empty());
  EXPECT_TRUE(lifecycle.IsOpen("hang-3"));
}

TEST(IncidentLifecycle, ACrashIsNotResolvedByTheOtherRanksBarsButByARestart) {
  IncidentLifecycle lifecycle;
  detect::Incident crash =
      IncidentOf("crash-1", rules::RuleKind::kCrash,
                 {FiringOf("python.traceback", "/logs/train.log", {100, 101})});
  crash.job.id = "llama-7";
  lifecycle.Open(crash, kStart);
  Stream stream;
  stream.bar = BarAt(50);
  stream.last_advance = kStart + seconds(3);  // rank 1 goes on until the watchdog
  stream.writers = {Writer(101)};
  lifecycle.Observe(stream.Activity(), kWall + seconds(3));
  EXPECT_TRUE(lifecycle.TakeResolved().empty());

  stream.writers = {Writer(101), Writer(130)};  // a DataLoader worker forked by rank 1
  lifecycle.Observe(stream.Activity(), kWall + seconds(4));
  EXPECT_TRUE(lifecycle.TakeResolved().empty()) << "an old writer still writes";

  stream.writers = {Writer(200), Writer(201)};  // the launcher started the job again
  lifecycle.Observe(stream.Activity(), kWall + seconds(60));
  const std::vector<Resolution> resolved = lifecycle.TakeResolved();
  ASSERT_EQ(resolved.size(), 1U);
  EXPECT_EQ(resolved[0].by, ResolvedBy::kRestart);
  EXPECT_EQ(resolved[0].why,
            "the job restarted: /logs/train.log is written by pid 200 (python3), none of the "
            "processes that wrote it when the incident opened");
  EXPECT_EQ(resolved[0].job_id, "llama-7");  // its peers' next failure is a new one
}

TEST(IncidentLifecycle, ARestartIntoANewLogOfTheSameSourceResolvesButAnOldLogDoesNot) {
  IncidentLifecycle lifecycle;
  lifecycle.Open(IncidentOf("crash-2", rules::RuleKind::kCrash,
                            {FiringOf("python.traceback", "/logs/run-1.log", {100})}),
                 kStart);
  Stream rank_log;  // another log of the job, followed before the crash, by another writer
  rank_log.name = "/logs/rank1.log";
  rank_log.writers = {Writer(101)};
  lifecycle.Observe(rank_log.Activity(), kWall);
  EXPECT_TRUE(lifecycle.TakeResolved().empty());

  Stream other_source = rank_log;
  other_source.source = "habana";
  other_source.first_seen = kStart + seconds(30);
  other_source.writers = {Writer(300)};
  lifecycle.Observe(other_source.Activity(), kWall + seconds(30));
  EXPECT_TRUE(lifecycle.TakeResolved().empty()) << "a file of another source";

  Stream next_run;
  next_run.name = "/logs/run-2.log";
  next_run.first_seen = kStart + seconds(40);
  next_run.writers = {Writer(400)};
  lifecycle.Observe(next_run.Activity(), kWall + seconds(40));
  const std::vector<Resolution> resolved = lifecycle.TakeResolved();
  ASSERT_EQ(resolved.size(), 1U);
  EXPECT_EQ(resolved[0].by, ResolvedBy::kRestart);
}

TEST(IncidentLifecycle, AWriterThatExitedBeforeItsTracebackFiredIsAnOldOne) {
  IncidentLifecycle lifecycle;
  detect::Firing crash = FiringOf("python.traceback", "/logs/train.log", {});
  crash.departed_writers = {100};  // gone before the traceback was judged complete
  lifecycle.Open(IncidentOf("crash-5", rules::RuleKind::kCrash, {crash}), kStart);
  Stream stream;
  stream.writers = {Writer(200)};
  lifecycle.Observe(stream.Activity(), kWall + seconds(8));
  const std::vector<Resolution> resolved = lifecycle.TakeResolved();
  ASSERT_EQ(resolved.size(), 1U);
  EXPECT_EQ(resolved[0].by, ResolvedBy::kRestart);
}

TEST(IncidentLifecycle, WithoutKnownWritersNoProcessCountsAsNew) {
  IncidentLifecycle lifecycle;
  lifecycle.Open(IncidentOf("crash-3", rules::RuleKind::kCrash,
                            {FiringOf("python.traceback", "/logs/train.log", {})}),
                 kStart);
  Stream stream;
  stream.writers = {Writer(100)};
  lifecycle.Observe(stream.Activity(), kWall + seconds(1));
  EXPECT_TRUE(lifecycle.TakeResolved().empty());
  EXPECT_TRUE(lifecycle.IsOpen("crash-3"));
}

TEST(IncidentLifecycle, ADeviceIncidentResolvesWhenAnyJobAdvancesAgain) {
  IncidentLifecycle lifecycle;
  detect::Firing kernel = FiringOf("habana.device_reset", "kmsg", {});
  kernel.source = "kernel";
  lifecycle.Open(IncidentOf("device-1", rules::RuleKind::kDevice, {kernel}), kStart);
  Stream stream;
  stream.bar = BarAt(7);
  stream.last_advance = kStart - seconds(1);
  lifecycle.Observe(stream.Activity(), kWall);
  EXPECT_TRUE(lifecycle.TakeResolved().empty());
  stream.last_advance = kStart + seconds(30);  // a rank finishing the step it was in
  lifecycle.Observe(stream.Activity(), kWall + seconds(30));
  EXPECT_TRUE(lifecycle.TakeResolved().empty());
  stream.last_advance = kStart + seconds(90);
  lifecycle.Observe(stream.Activity(), kWall + seconds(90));
  const std::vector<Resolution> resolved = lifecycle.TakeResolved();
  ASSERT_EQ(resolved.size(), 1U);
  EXPECT_EQ(resolved[0].why,
            "progress resumed on /logs/train.log ('train' at 7/100): the device serves the job "
            "again");
}

TEST(IncidentLifecycle, AckResolvesAnOpenIncidentOrAnyOther) {
  IncidentLifecycle lifecycle;
  lifecycle.Open(IncidentOf("crash-4", rules::RuleKind::kCrash,
                            {FiringOf("python.traceback", "/logs/train.log", {100})}),
                 kStart);
  const Resolution acked = lifecycle.Ack("crash-4", "node drained", kWall + seconds(9));
  EXPECT_EQ(acked.by, ResolvedBy::kAck);
  EXPECT_EQ(acked.why, "acknowledged by an operator: node drained");
  EXPECT_EQ(acked.rules, std::vector<std::string>{"python.traceback"});
  EXPECT_EQ(acked.opened, kWall);
  EXPECT_FALSE(lifecycle.any_open());
  EXPECT_TRUE(lifecycle.TakeResolved().empty()) << "the ack is returned, not queued";
  EXPECT_EQ(lifecycle.Ack("older", "", kWall).why, "acknowledged by an operator");
}

TEST(IncidentLifecycle, ManualSnapshotsAreNeverOpenAndTheListIsBounded) {
  IncidentLifecycle lifecycle;
  detect::Incident manual = IncidentOf("manual-1", rules::RuleKind::kCrash, {});
  manual.reason = "before the upgrade";
  lifecycle.Open(manual, kStart);
  EXPECT_FALSE(lifecycle.any_open());
  for (std::size_t i = 0; i < IncidentLifecycle::kMaxOpen + 3; ++i) {
    lifecycle.Open(IncidentOf("crash-" + std::to_string(i), rules::RuleKind::kCrash,
                              {FiringOf("python.traceback", "/logs/train.log", {100})}),
                   kStart);
  }
  EXPECT_EQ(lifecycle.open_count(), IncidentLifecycle::kMaxOpen);
  EXPECT_FALSE(lifecycle.IsOpen("crash-0")) << "the oldest are forgotten first";
  EXPECT_TRUE(lifecycle.IsOpen("crash-3"));
}

TEST(IncidentHistory, OpenIncidentsComeBackAndAResolvedOnesCooldownEnds) {
  detect::Incident hang = IncidentOf("hang-9", rules::RuleKind::kHang,
                                     {FiringOf("progress.stall", "/logs/train.log", {100})});
  detect::Incident crash = IncidentOf("crash-9", rules::RuleKind::kCrash,
                                      {FiringOf("python.traceback", "/logs/train.log", {100})});
  crash.opened = kWall + seconds(5);
  detect::Incident manual = IncidentOf("manual-9", rules::RuleKind::kCrash, {});
  manual.reason = "by hand";
  const Resolution resolved{"hang-9",
                            ResolvedBy::kProgress,
                            "progress resumed",
                            kWall + seconds(60),
                            kWall,
                            {"progress.stall"},
                            ""};
  const std::string log = detect::IncidentJson(hang) + "\n" + detect::IncidentJson(crash) + "\n" +
                          detect::IncidentJson(manual) + "\n" + ResolutionJson(resolved) + "\n";

  const IncidentHistory history = ParseIncidentHistory(log);
  EXPECT_EQ(history.incidents, 3U);
  ASSERT_EQ(history.open.size(), 1U);
  const OpenIncident& open = history.open[0];
  EXPECT_EQ(open.id, "crash-9");
  EXPECT_EQ(open.kind, rules::RuleKind::kCrash);
  EXPECT_TRUE(open.restored);
  EXPECT_EQ(open.writers, std::set<int>{100});
  EXPECT_TRUE(open.streams.contains(StreamKey("train", "/logs/train.log")));
  EXPECT_EQ(open.opened_wall, kWall + seconds(5));
  EXPECT_FALSE(history.rule_last_opened.contains("progress.stall"))
      << "the resolved hang's cooldown ended with it";
  EXPECT_TRUE(history.rule_last_opened.contains("python.traceback"));
}

TEST(IncidentLog, TheResolutionRecordSaysHowWhyAndForHowLong) {
  const Resolution resolved{
      "hang-9", ResolvedBy::kRestart, "the job restarted", kWall + seconds(90), kWall, {}, ""};
  EXPECT_EQ(ResolutionJson(resolved),
            R"({"resolved":"hang-9","how":"restart","why":"the job restarted",)"
            R"("at":"2025-11-25T09:13:30.000Z","at_ms":1764062010000,"open_seconds":90.0})");
}

// A resolving rule's line ends the incidents its rule fired in from the same source, when the
// failure it names is theirs; the record says how.
TEST(IncidentLifecycle, ALineThatSaysTheFailureEndedResolvesItsIncidentOnly) {
  IncidentLifecycle lifecycle;
  detect::Firing a = FiringOf("storage.nfs_down", "kmsg", {});
  a.event.text = "nfs: server a not responding";
  detect::Firing b = FiringOf("storage.nfs_down", "kmsg", {});
  b.event.text = "nfs: server b not responding";
  lifecycle.Open(IncidentOf("inc-a", rules::RuleKind::kHang, {a}), kStart);
  lifecycle.Open(IncidentOf("inc-b", rules::RuleKind::kHang, {b}), kStart);
  lifecycle.Open(IncidentOf("inc-other", rules::RuleKind::kHang,
                            {FiringOf("progress.stall", "/logs/train.log", {7})}),
                 kStart);
  auto server_is = [](std::string server) {
    return [server](std::string_view text) {
      return text.find("server " + server + " ") != std::string_view::npos;
    };
  };
  lifecycle.ResolveByLine("storage.nfs_down", "kernel", server_is("a"), "why", kWall);
  EXPECT_TRUE(lifecycle.TakeResolved().empty()) << "another source's line";
  lifecycle.ResolveByLine("storage.nfs_down", "train", server_is("c"), "why", kWall);
  EXPECT_TRUE(lifecycle.TakeResolved().empty()) << "another server";
  lifecycle.ResolveByLine("storage.nfs_down", "train", server_is("a"),
                          "a line said it ended: nfs: server a OK", kWall + seconds(30));
  const std::vector<Resolution> resolved = lifecycle.TakeResolved();
  ASSERT_EQ(resolved.size(), 1U);
  EXPECT_EQ(resolved[0].id, "inc-a");
  EXPECT_EQ(resolved[0].by, ResolvedBy::kLine);
  EXPECT_EQ(ResolvedByName(resolved[0].by), "line");
  EXPECT_EQ(resolved[0].why, "a line said it ended: nfs: server a OK");
  EXPECT_TRUE(lifecycle.IsOpen("inc-b"));
  EXPECT_TRUE(lifecycle.IsOpen("inc-other"));

  // Two servers lost within one settle time: one incident, resolved when both are back.
  detect::Firing c = FiringOf("storage.nfs_down", "kmsg", {});
  c.event.text = "nfs: server c not responding";
  lifecycle.Open(IncidentOf("inc-bc", rules::RuleKind::kHang, {b, c}), kStart);
  lifecycle.ResolveByLine("storage.nfs_down", "train", server_is("c"), "c back", kWall);
  EXPECT_TRUE(lifecycle.TakeResolved().empty());
  EXPECT_TRUE(lifecycle.IsOpen("inc-bc")) << "b is still away";
  lifecycle.ResolveByLine("storage.nfs_down", "train", server_is("b"), "b back", kWall);
  const std::vector<Resolution> both = lifecycle.TakeResolved();
  ASSERT_EQ(both.size(), 2U) << "inc-b and inc-bc";
  EXPECT_FALSE(lifecycle.IsOpen("inc-bc"));
}

}  // namespace
}  // namespace trainwatch::ops
