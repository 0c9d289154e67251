// When the daemon hands back idle memory: IdleMemory::kDelay after the last piece of work, a
// later one postponing it, never while a capture runs, never after Stop; stepped on a FakeEnv.
// And ReleaseIdleMemory itself in this process: it advises only its own read-only file
// mappings, and the process goes on working.
#include "core/idle_memory.h"

#include <gtest/gtest.h>

#include <string>

#include "support/fake_env.h"
#include "support/temp_dir.h"

namespace trainwatch {
namespace {

using std::chrono::milliseconds;

class IdleMemoryTest : public ::testing::Test {
 protected:
  void Step(milliseconds by) {
    env_.Advance(by);
    env_.StepPool();
  }
  testing::TempDir proc_;
  testing::FakeEnv env_{proc_.path().string()};
  bool busy_ = false;
  int releases_ = 0;
  IdleMemory idle_{env_, [this] { return busy_; }, [this] { ++releases_; }};
};

TEST_F(IdleMemoryTest, ReleasesOnceTheDelayAfterTheLastWork) {
  idle_.AfterWork();
  Step(IdleMemory::kDelay - milliseconds(1000));
  idle_.AfterWork();  // more work: from now
  Step(milliseconds(9000));
  EXPECT_EQ(releases_, 0);
  Step(milliseconds(1000));
  EXPECT_EQ(releases_, 1);
  Step(IdleMemory::kDelay * 3);
  EXPECT_EQ(releases_, 1);  // nothing more to hand back until more work
}

TEST_F(IdleMemoryTest, WaitsForACaptureAndNeverReleasesAfterStop) {
  idle_.AfterWork();
  busy_ = true;
  Step(IdleMemory::kDelay);
  EXPECT_EQ(releases_, 0);
  busy_ = false;
  Step(IdleMemory::kDelay);
  EXPECT_EQ(releases_, 1);
  idle_.AfterWork();
  idle_.Stop();
  idle_.AfterWork();
  Step(IdleMemory::kDelay * 2);
  EXPECT_EQ(releases_, 1);
}

TEST(ReleaseIdleMemory, AdvisesOnlyReadOnlyFileMappingsAndTheProcessGoesOn) {
  std::string kept(1 << 20, 'x');  // a written heap page must survive
  const IdleMemoryRelease release = ReleaseIdleMemory();
  EXPECT_GT(release.mappings, 0u);  // this test binary's own text at least (Linux >= 5.4)
  EXPECT_EQ(kept, std::string(1 << 20, 'x'));
}

}  // namespace
}  // namespace trainwatch
