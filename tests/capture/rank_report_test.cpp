// The ranks part of a bundle: a job run wholly on this node lists the ranks of its WORLD_SIZE
// the capture never saw; one node's share of a bigger job does not guess at the others.
#include "capture/rank_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace trainwatch::capture {
namespace {

RankReport ReportOf(const std::vector<int>& ranks, int world_size, int local_world_size) {
  RankReport report;
  for (const int rank : ranks) {
    RankEvidence evidence;
    evidence.process.pid = 1000 + rank;
    evidence.process.rank = rank;
    evidence.process.rank_source = "RANK";
    evidence.process.identity.rank = rank;
    evidence.process.identity.local_rank = rank;
    evidence.process.identity.world_size = world_size;
    evidence.process.identity.local_world_size = local_world_size;
    evidence.process.comm = "python3";
    report.ranks.push_back(std::move(evidence));
  }
  return report;
}

void Assemble(RankReport& report) {
  Result<std::shared_ptr<const collect::Redactor>> redactor = collect::Redactor::Create();
  ASSERT_TRUE(redactor.ok());
  collect::RedactionCounts counts;
  AssembleRankReport(report, std::vector<RankToolResults>(report.ranks.size()), **redactor, counts,
                     std::vector<std::string>(report.ranks.size(), "python3.11"));
}

std::string SummaryOf(const RankReport& report) {
  for (const collect::Artifact& artifact : report.result.artifacts) {
    if (artifact.path == "ranks/summary.txt") {
      return artifact.content;
    }
  }
  return {};
}

TEST(RankReport, AJobRunWhollyHereListsTheRanksNeverSeen) {
  RankReport report = ReportOf({0, 1, 2}, 4, 4);
  Assemble(report);
  EXPECT_EQ(report.never_seen, std::vector<int>{3});
  EXPECT_EQ(nlohmann::json::parse(RanksJson(report))["never_seen"], nlohmann::json::array({3}));
  EXPECT_NE(SummaryOf(report).find("Never seen here: 3 of world size 4"), std::string::npos)
      << SummaryOf(report);
}

TEST(RankReport, TheRosterSaysWhoIsAliveWhoExitedAndHowAndWhoWasNeverSeen) {
  RankReport report = ReportOf({0, 1, 2, 4}, 6, 6);
  report.ranks[2].alive = false;
  report.ranks[2].process.exit_cause = "killed by signal 9 (SIGKILL)";
  report.ranks[3].alive = false;  // how it ended is unknown
  Assemble(report);
  const std::string roster =
      "world size 6: ranks 0, 1 alive; rank 2 exited (killed by signal 9 (SIGKILL)); rank 4 "
      "exited; ranks 3, 5 never seen";
  EXPECT_EQ(RosterText(report), roster);
  const nlohmann::json ranks = nlohmann::json::parse(RanksJson(report));
  EXPECT_EQ(ranks["roster"], roster);
  EXPECT_EQ(ranks["ranks"][2]["exit_cause"], "killed by signal 9 (SIGKILL)");
  EXPECT_EQ(ranks["ranks"][2]["where"], "exited (killed by signal 9 (SIGKILL))");
  EXPECT_NE(SummaryOf(report).find("Ranks: " + roster), std::string::npos) << SummaryOf(report);
}

TEST(RankReport, OneNodesShareOfABiggerJobGuessesNothingOfTheOthers) {
  RankReport report = ReportOf({0, 1, 2, 3}, 8, 4);  // node 0 of two: its ranks are local ones
  Assemble(report);
  EXPECT_TRUE(report.never_seen.empty());
  EXPECT_FALSE(nlohmann::json::parse(RanksJson(report)).contains("never_seen"));
}

}  // namespace
}  // namespace trainwatch::capture
