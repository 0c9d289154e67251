#include "capture/command_plan.h"

#include <gtest/gtest.h>

namespace trainwatch::capture {
namespace {

config::CommandConfig CommandOf(std::string name, std::vector<std::string> argv) {
  config::CommandConfig command;
  command.name = std::move(name);
  command.argv = std::move(argv);
  command.as = "x/" + command.name + ".txt";
  return command;
}

detect::Incident SlurmIncident(std::string id, std::string from = "SLURM_JOB_ID") {
  detect::Incident incident;
  incident.kind = rules::RuleKind::kCrash;
  incident.job.id = std::move(id);
  incident.job.id_from = std::move(from);
  return incident;
}

TEST(CommandPlan, TheSlurmJobIsFilledInOnlyForASlurmJobIdOfItsShape) {
  const std::vector<config::CommandConfig> commands = {
      CommandOf("slurm-job", {"scontrol", "show", "job", "{slurm_job}"}),
      CommandOf("ps", {"ps", "-e"})};
  std::vector<config::CommandConfig> planned = CommandsFor(commands, SlurmIncident("4242"), {}, "");
  ASSERT_EQ(planned.size(), 2u);
  EXPECT_EQ(planned[0].argv, (std::vector<std::string>{"scontrol", "show", "job", "4242"}));
  EXPECT_EQ(CommandsFor(commands, SlurmIncident("4242_7"), {}, "")[0].argv.back(), "4242_7");
  // A job id from elsewhere, or one a job's environment made up, is never passed on.
  for (const detect::Incident& incident :
       {SlurmIncident("4242", "TORCHELASTIC_RUN_ID"), SlurmIncident("42 --all"),
        SlurmIncident("-1"), SlurmIncident("_4"), SlurmIncident("1_2_3"), SlurmIncident("")}) {
    planned = CommandsFor(commands, incident, {}, "");
    ASSERT_EQ(planned.size(), 1u) << incident.job.id;
    EXPECT_EQ(planned[0].name, "ps");
    const std::vector<collect::CollectorResult> skipped =
        SkippedForNoContainer(commands, incident, "");
    ASSERT_EQ(skipped.size(), 1u);
    EXPECT_EQ(skipped[0].name, "slurm-job");
    EXPECT_EQ(skipped[0].status, collect::CollectorStatus::kSkipped);
    EXPECT_NE(skipped[0].detail.find("no Slurm job known"), std::string::npos);
  }
}

}  // namespace
}  // namespace trainwatch::capture
