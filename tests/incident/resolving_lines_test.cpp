#include "incident/resolving_lines.h"

#include <gtest/gtest.h>

#include "incident/nfs_test_rules.h"

namespace trainwatch::incident {
namespace {

const detect::WallTime kWall = detect::WallTime{} + std::chrono::seconds(1764061920);

detect::Firing Line(const std::string& rule, const std::string& text) {
  detect::Firing firing;
  firing.event.rule_id = rule;
  firing.event.text = text;
  firing.source = "kernel";
  firing.stream = "kmsg";
  return firing;
}

// The hang "inc-1" of storage.nfs_down, its firing's text `text`, open in `lifecycle`.
detect::Incident OpenNfsHang(ops::IncidentLifecycle& lifecycle, const std::string& text) {
  detect::Incident incident;
  incident.id = "inc-1";
  incident.kind = rules::RuleKind::kHang;
  incident.rules = {"storage.nfs_down"};
  incident.firings = {Line("storage.nfs_down", text)};
  lifecycle.Open(incident, detect::SteadyTime{});
  return incident;
}

TEST(ResolvingLines, TheSameServersOkResolvesItsIncidentAndOpensNone) {
  const ResolvingLines resolving(NfsRules());
  ops::IncidentLifecycle lifecycle;
  const detect::Incident incident =
      OpenNfsHang(lifecycle, "[12.5] nfs: server fs01 not responding, still trying");

  EXPECT_FALSE(resolving.Resolve(incident.firings[0], lifecycle, kWall)) << "not a resolving rule";
  EXPECT_TRUE(
      resolving.Resolve(Line("storage.nfs_back", "[20.1] nfs: server fs02 OK"), lifecycle, kWall));
  EXPECT_TRUE(lifecycle.IsOpen("inc-1")) << "another server is back";
  EXPECT_TRUE(
      resolving.Resolve(Line("storage.nfs_back", "[31.0] nfs: server fs01 OK"), lifecycle, kWall));
  EXPECT_FALSE(lifecycle.IsOpen("inc-1"));
  const std::vector<ops::Resolution> resolved = lifecycle.TakeResolved();
  ASSERT_EQ(resolved.size(), 1U);
  EXPECT_EQ(resolved[0].why, "a line said it ended (storage.nfs_back): [31.0] nfs: server fs01 OK");
}

TEST(ResolvingLines, AFailureWhoseNameCannotBeReadAgainWaitsForAnAck) {
  const ResolvingLines resolving(NfsRules());
  ops::IncidentLifecycle lifecycle;
  // Its text cut where the server's name was (a line past the cap keeps its end).
  OpenNfsHang(lifecycle, "...responding, still trying");
  EXPECT_TRUE(resolving.Resolve(Line("storage.nfs_back", "nfs: server fs01 OK"), lifecycle, kWall));
  EXPECT_TRUE(lifecycle.IsOpen("inc-1"));
}

TEST(ResolvingLines, AFailureBackAfterItsOkIsTheSameServersOnly) {
  const ResolvingLines resolving(NfsRules());
  const detect::Firing ok = Line("storage.nfs_back", "nfs: server fs01 OK");
  EXPECT_TRUE(resolving.CameBack(ok, Line("storage.nfs_down", "nfs: server fs01 not responding")));
  EXPECT_FALSE(resolving.CameBack(ok, Line("storage.nfs_down", "nfs: server fs02 not responding")));
  detect::Firing elsewhere = Line("storage.nfs_down", "nfs: server fs01 not responding");
  elsewhere.source = "train";
  EXPECT_FALSE(resolving.CameBack(ok, elsewhere)) << "another source's line";
  EXPECT_FALSE(resolving.CameBack(Line("storage.nfs_down", "nfs: server fs01 not responding"),
                                  Line("storage.nfs_down", "nfs: server fs01 not responding")))
      << "no resolving line";
}

}  // namespace
}  // namespace trainwatch::incident
