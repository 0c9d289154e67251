// Whose processes an incident's capture may pause (security round 3, item 6): one user's log
// line must not make another user's ranks be paused, ptraced or bundled.
#include "capture/speakers.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <thread>

namespace trainwatch::capture {
namespace {

detect::Firing FiringIn(const std::string& path, std::optional<uid_t> owner) {
  detect::Firing firing;
  firing.stream = path;
  firing.file_id = "1:2";
  firing.file_owner = owner;
  return firing;
}

TEST(Speakers, AUsersLogSpeaksForThatUserOnly) {
  detect::Incident incident;
  incident.firings = {FiringIn("/logs/train.log", 0)};
  EXPECT_TRUE(IncidentSpeakers(incident).empty()) << "root's log speaks for everyone";
  incident.firings = {FiringIn("/logs/train.log", 4242)};
  EXPECT_EQ(IncidentSpeakers(incident), (std::set<uid_t>{4242}));
  // Its writers count too, and the kernel's lines (no file) speak for no one in particular.
  incident.firings.push_back(FiringIn("kmsg", std::nullopt));
  incident.firings.back().file_id.clear();
  source::WriterProcess writer;
  writer.uid = 4343;
  incident.firings.back().writers.push_back(writer);
  EXPECT_EQ(IncidentSpeakers(incident), (std::set<uid_t>{4242, 4343}));
  // A log whose owner is not known speaks for no one: it fails closed.
  incident.firings = {FiringIn("/logs/train.log", std::nullopt)};
  EXPECT_EQ(IncidentSpeakers(incident), (std::set<uid_t>{kUnknownSpeaker}));
  // A peer's incident speaks for its job's owner, checked to be this node's.
  detect::Incident peer;
  peer.peer = detect::PeerLink{};
  peer.job.uid = 1000;
  EXPECT_EQ(IncidentSpeakers(peer), (std::set<uid_t>{1000}));
}

TEST(Speakers, OtherUsersProcessesAreLeftOutAndSaid) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "needs root (a process of another user)";
  }
  const pid_t theirs = ::fork();
  ASSERT_GE(theirs, 0);
  if (theirs == 0) {
    if (::setgid(4242) != 0 || ::setuid(4242) != 0) {
      ::_exit(3);
    }
    ::pause();
    ::_exit(0);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // setuid done
  std::vector<int> pids = {::getpid(), theirs};
  std::string why;
  KeepSpeakersProcesses({}, "/proc", pids, why);
  EXPECT_EQ(pids.size(), 2u) << "no speaker: everyone's";
  KeepSpeakersProcesses({4242}, "/proc", pids, why);
  ::kill(theirs, SIGKILL);
  ::waitpid(theirs, nullptr, 0);
  EXPECT_EQ(pids, std::vector<int>{theirs});
  EXPECT_NE(why.find("1 process(es) of other users (uid 0) left out"), std::string::npos) << why;
  EXPECT_NE(why.find("uid 4242's log"), std::string::npos) << why;
}

}  // namespace
}  // namespace trainwatch::capture
