// Which rank wrote a firing: its launcher's prefix, else its writers' RANK — the live ones, or
// the ones that exited before it fired, as the sources remember them.
#include "incident/firing_rank.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace trainwatch::incident {
namespace {

source::WriterProcess Writer(int pid, const std::string& environ) {
  source::WriterProcess writer;
  writer.pid = pid;
  writer.comm = "python3";
  writer.environ = environ;
  return writer;
}

std::string Env(const std::string& rank) {
  return std::string("PATH=/usr/bin\0RANK=", 19) + rank + std::string("\0WORLD_SIZE=4\0", 14);
}

detect::Firing FiringOf(const std::string& text) {
  detect::Firing firing;
  firing.event.text = text;
  firing.stream = "/logs/rank.log";
  return firing;
}

std::vector<source::WriterProcess> NoneRemembered() { return {}; }

TEST(FiringRank, TheLaunchersPrefixNamesTheRank) {
  detect::Firing firing = FiringOf("[rank3]: Traceback (most recent call last):");
  firing.writers = {Writer(10, Env("0"))};  // a log all ranks write: its prefix tells
  EXPECT_EQ(RankOfFiring(firing, NoneRemembered), 3);
  EXPECT_EQ(RankOfFiring(FiringOf("[1,2]<stderr>:Traceback"), NoneRemembered), 2);
}

TEST(FiringRank, TheRankALineIsAboutComesBeforeItsWriter) {
  // Rank 0 reports that rank 5 is the slowest.
  detect::Firing firing = FiringOf("[rank0]: | MnRtt/Rnk: 2000ms/1 | MxRtt/Rnk: 2700ms/5");
  firing.event.rank = 5;
  firing.writers = {Writer(10, Env("0"))};
  EXPECT_EQ(RankOfFiring(firing, NoneRemembered), 5);
}

TEST(FiringRank, WithoutAPrefixTheWritersRankNamesIt) {
  detect::Firing firing = FiringOf("Traceback (most recent call last):");
  firing.writers = {Writer(10, "PATH=/bin"), Writer(11, Env("2"))};  // a tee and the rank
  EXPECT_EQ(RankOfFiring(firing, NoneRemembered), 2);
}

TEST(FiringRank, WritersThatDisagreeNameNoRank) {
  detect::Firing firing = FiringOf("RuntimeError: boom");
  firing.writers = {Writer(10, Env("0")), Writer(11, Env("1"))};
  EXPECT_EQ(RankOfFiring(firing, NoneRemembered), std::nullopt);
}

TEST(FiringRank, AWriterThatExitedBeforeItsTracebackWasJudgedIsLookedUpInWhatIsRemembered) {
  detect::Firing firing = FiringOf("Traceback (most recent call last):");
  firing.departed_writers = {42};
  int asked = 0;
  const auto remembered = [&asked] {
    ++asked;
    return std::vector<source::WriterProcess>{Writer(41, Env("0")), Writer(42, Env("3"))};
  };
  EXPECT_EQ(RankOfFiring(firing, remembered), 3);
  EXPECT_EQ(asked, 1);
  firing.writers = {Writer(50, Env("1"))};  // a live writer tells: nothing is asked
  EXPECT_EQ(RankOfFiring(firing, remembered), 1);
  EXPECT_EQ(asked, 1);
}

}  // namespace
}  // namespace trainwatch::incident
