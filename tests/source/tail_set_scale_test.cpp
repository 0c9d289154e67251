// What following many files costs TailSet, counted rather than timed: the work of finding each
// new file's origin (its saved position after a restart, or the file it is a rotated copy of)
// must grow linearly with the number of files. It once compared every new file with every
// followed file and every saved position: a daemon watching 10,000 files took 76 s to start.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "source/tail_set.h"
#include "support/fake_env.h"

namespace trainwatch::source {
namespace {

using testing::FakeEnv;

struct Started {
  std::uint64_t origin_checks = 0;
  std::size_t followed = 0;
  std::vector<SavedTail> saved;
};

// Starts a TailSet on `files` short logs (shorter than a fingerprint, so each may still become
// a copy: the most expensive case), with `saved` from a previous run, and stops it.
Started StartOn(int files, std::vector<SavedTail> saved) {
  FakeEnv env;
  env.files().MakeDirs("/logs");
  for (int n = 0; n < files; ++n) {
    std::string path = "/logs/job";
    path += std::to_string(n);
    path += ".log";
    env.files().Append(path, "step 1 loss 2.5 rank 7\n");
  }
  config::SourceConfig source;
  source.name = "train";
  source.paths = {"/logs/*.log"};
  TailSet::Hooks hooks;
  hooks.on_open = [](TailedFile&) { return true; };
  hooks.on_batch = [](TailedFile&, const LineBatch&, std::uint64_t) {};
  hooks.on_pending = [](TailedFile&) {};
  hooks.on_changed = [](TailedFile&) {};
  hooks.on_truncated = [](TailedFile&) {};
  hooks.on_close = [](TailedFile&) {};
  hooks.durable = [](const TailedFile& file) { return file.tail.position(); };
  const bool first_start = saved.empty();
  TailSet tails(env, source, config::WatchConfig{}, hooks, std::move(saved), first_start);
  tails.Start();
  env.RunUntilIdle();
  Started started;
  started.origin_checks = tails.origin_checks();
  started.followed = tails.files().size();
  tails.SaveTo(started.saved);
  return started;
}

TEST(TailSetScale, FindingNewFilesOriginsGrowsLinearlyAtTheFirstStart) {
  const Started small = StartOn(400, {});
  const Started large = StartOn(800, {});
  ASSERT_EQ(small.followed, 400U);
  ASSERT_EQ(large.followed, 800U);
  // Twice the files, at most a little over twice the work (quadratic work quadruples).
  EXPECT_LE(large.origin_checks, 2 * small.origin_checks + 800) << small.origin_checks;
  EXPECT_LE(large.origin_checks, 4U * 800) << "more than a few checks per file";
}

TEST(TailSetScale, ResumingSavedPositionsGrowsLinearlyAtARestart) {
  for (const int files : {400, 800}) {
    const Started first = StartOn(files, {});
    ASSERT_EQ(first.saved.size(), static_cast<std::size_t>(files));
    const Started again = StartOn(files, first.saved);
    ASSERT_EQ(again.followed, static_cast<std::size_t>(files));
    // Every file resumed from its own saved position, none left over.
    EXPECT_EQ(again.saved.size(), static_cast<std::size_t>(files));
    EXPECT_LE(again.origin_checks, 4U * static_cast<std::uint64_t>(files)) << files << " files";
  }
}

}  // namespace
}  // namespace trainwatch::source
