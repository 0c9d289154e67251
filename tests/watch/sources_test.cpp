// Sources on a FakeEnv: what a reload keeps (files, offsets, a traceback half written), what it
// starts and stops, and the source-level silence and stall checks stepped through time.
#include "watch/sources.h"

#include <gtest/gtest.h>

#include "rules/rule_loader.h"
#include "support/fake_env.h"
#include "support/temp_dir.h"

namespace trainwatch::watch {
namespace {

using std::chrono::milliseconds;
using testing::FakeEnv;

constexpr const char* kRules = R"(rules:
  - id: t.traceback
    kind: crash
    tags: [train]
    description: traceback
    pattern: 'Traceback \(most recent call last\):'
    multiline: python-traceback
    examples:
      fires: ["Traceback (most recent call last):\n  File \"t.py\", line 1, in <module>\nKeyError: 'x'\n"]
      quiet: [y]
  - id: t.oom
    kind: crash
    tags: [train, other]
    description: OOM
    pattern: 'out of memory'
    examples: {fires: [out of memory], quiet: [y]}
  - id: t.quiet
    kind: hang
    tags: [train]
    description: silence
    silence: {after: 10m}
  - id: t.stall
    kind: hang
    tags: [train]
    description: stall
    progress: {stall_after: 1h}
)";

class SourcesTest : public ::testing::Test {
 protected:
  SourcesTest() : env_(proc_.path().string()) {  // an empty /proc: no writers to be found
    rules::LoadedRules loaded;
    rules::LoadRuleText(kRules, "t.yaml", loaded);
    EXPECT_TRUE(loaded.errors.empty());
    rules_ = loaded.rules;
    env_.files().MakeDirs("/logs");
    sources_ = std::make_unique<Sources>(
        env_, nullptr, "",
        [this](std::vector<detect::Firing>& firings, detect::StreamDetector*) {
          for (detect::Firing& firing : firings) {
            fired_.push_back(
                firing.event.rule_id + ": " +
                (firing.event.summary.empty() ? firing.event.text : firing.event.summary));
          }
        },
        [] {}, ops::IncidentHistory{}, std::vector<source::SavedTail>{}, /*first_start=*/true);
  }

  static config::SourceConfig Source(const std::string& name, const std::string& glob,
                                     std::vector<std::string> tags = {"train"}) {
    config::SourceConfig source;
    source.name = name;
    source.tags = std::move(tags);
    source.paths = {glob};
    return source;
  }
  void Apply(std::vector<config::SourceConfig> sources) {
    config::DaemonConfig config;
    config.sources = std::move(sources);
    std::vector<Diagnostic> notes;
    Result<PreparedSources> prepared = PrepareSources(config, rules_, false, "", notes);
    ASSERT_TRUE(prepared.ok()) << prepared.error().message;
    sources_->Apply(std::move(*prepared), config);
    env_.RunUntilIdle();
  }
  void Settle() {
    env_.RunUntilIdle();
    env_.Advance(milliseconds(20));
  }

  ::trainwatch::testing::TempDir proc_;
  FakeEnv env_;
  std::vector<rules::Rule> rules_;
  std::unique_ptr<Sources> sources_;
  std::vector<std::string> fired_;
};

TEST_F(SourcesTest, AReloadKeepsFilesOffsetsAndATracebackHalfWritten) {
  Apply({Source("train", "/logs/*.log")});
  env_.files().Append("/logs/rank0.log",
                      "step 1\nTraceback (most recent call last):\n"
                      "  File \"train.py\", line 3, in <module>\n");
  Settle();
  EXPECT_TRUE(fired_.empty()) << "the traceback is not over yet";
  // The operator reloads: the same source, another tag added.
  Apply({Source("train", "/logs/*.log", {"train", "other"})});
  EXPECT_EQ(sources_->files(), 1u);
  env_.files().Append("/logs/rank0.log", "RuntimeError: CUDA error: an illegal memory access\n");
  Settle();
  // The writer is quiet: the traceback is whole. Checked every 300 ms, closed once the writer
  // has been quiet that long: within 600 ms.
  env_.Advance(milliseconds(600));
  EXPECT_EQ(fired_, std::vector<std::string>{
                        "t.traceback: RuntimeError: CUDA error: an illegal memory access"});
  // Nothing read twice: the file was not reopened from its start.
  env_.files().Append("/logs/rank0.log", "out of memory\n");
  Settle();
  ASSERT_EQ(fired_.size(), 2u);
  EXPECT_EQ(fired_[1], "t.oom: out of memory");
}

TEST_F(SourcesTest, AReloadStartsNewSourcesAndClosesRemovedOnes) {
  Apply({Source("train", "/logs/*.log")});
  env_.files().Append("/logs/rank0.log", "step 1\n");
  env_.files().Append("/other/job.txt", "hello\n");
  Settle();
  EXPECT_EQ(sources_->size(), 1u);
  Apply({Source("other", "/other/*.txt", {"other"})});
  EXPECT_EQ(sources_->size(), 1u);
  EXPECT_EQ(sources_->files(), 1u);
  EXPECT_EQ(env_.watched_dirs(), std::set<std::string>{"/other"});
  env_.files().Append("/logs/rank0.log", "out of memory\n");  // no longer watched
  env_.files().Append("/other/job.txt", "out of memory\n");
  Settle();
  EXPECT_EQ(fired_, std::vector<std::string>{"t.oom: out of memory"});
}

TEST_F(SourcesTest, ASourceFallsSilentOnlyAfterItsPeriodOfFakeTime) {
  Apply({Source("train", "/logs/*.log")});
  env_.files().Append("/logs/rank0.log", "step 1\n");
  Settle();
  env_.Advance(std::chrono::minutes(9) + std::chrono::seconds(59));
  sources_->Tick(env_.SteadyNow());
  EXPECT_TRUE(fired_.empty());
  env_.Advance(std::chrono::seconds(1));
  sources_->Tick(env_.SteadyNow());
  ASSERT_EQ(fired_.size(), 1u);
  EXPECT_EQ(fired_[0].rfind("t.quiet: ", 0), 0u) << fired_[0];
  sources_->Tick(env_.SteadyNow());
  EXPECT_EQ(fired_.size(), 1u) << "said once per silence";
  env_.files().Append("/logs/rank0.log", "step 2\n");
  Settle();
  env_.Advance(std::chrono::minutes(10));
  sources_->Tick(env_.SteadyNow());
  EXPECT_EQ(fired_.size(), 2u) << "a new silence after new output";
}

TEST_F(SourcesTest, ALogItsKilledWriterClosedMidBarIsOneCrashAndNoSilence) {
  // No /proc scan ever sees this writer (an empty /proc here): only the kernel's close of the
  // log (IN_CLOSE_WRITE) says it is gone, and a scan then finds no process holding it.
  Apply({Source("train", "/logs/*.log")});
  env_.files().Append("/logs/rank0.log",
                      "starting\nEpoch 0:   5%|5         | 2/40 [00:01<00:19,  1.9it/s]\r");
  Settle();
  env_.Advance(milliseconds(300));  // the scan for the new file's writer: none found
  EXPECT_TRUE(fired_.empty());
  env_.CloseWrite("/logs/rank0.log");
  env_.RunUntilIdle();
  // A scan ran 300 ms ago: the next comes a second after it, no sooner.
  env_.Advance(milliseconds(600));
  EXPECT_TRUE(fired_.empty());
  env_.Advance(milliseconds(400));
  ASSERT_EQ(fired_.size(), 1u);
  EXPECT_EQ(fired_[0].rfind("writer.exited: writer exited: the log's last writer", 0), 0u)
      << fired_[0];
  env_.Advance(std::chrono::minutes(11));  // past the 10-minute silence
  sources_->Tick(env_.SteadyNow());
  EXPECT_EQ(fired_.size(), 1u) << "its job ended: no silence";
}

TEST_F(SourcesTest, ALogClosedByItsWriterBeforeItWasFollowedIsJudgedOnceFollowed) {
  // On a busy machine the job can write its whole log and close it before the rescan its
  // creation asked for runs: the close came for a file not yet followed.
  Apply({Source("train", "/logs/*.log")});
  Settle();
  env_.files().Append("/logs/rank0.log",
                      "starting\nEpoch 0:   5%|5         | 2/40 [00:01<00:19,  1.9it/s]\r");
  env_.CloseWrite("/logs/rank0.log");
  Settle();  // the rescan follows it now
  env_.Advance(std::chrono::seconds(1));
  ASSERT_EQ(fired_.size(), 1u);
  EXPECT_EQ(fired_[0].rfind("writer.exited: writer exited: the log's last writer", 0), 0u)
      << fired_[0];
  env_.Advance(std::chrono::minutes(11));  // past the 10-minute silence
  sources_->Tick(env_.SteadyNow());
  EXPECT_EQ(fired_.size(), 1u) << "its job ended: no silence";
}

}  // namespace
}  // namespace trainwatch::watch
