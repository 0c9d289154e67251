#include "ops/metrics_textfile.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "support/file_text.h"
#include "support/temp_dir.h"

namespace trainwatch::ops {
namespace {

using std::chrono::seconds;
using trainwatch::testing::TempDir;

const MetricsTextfile::SteadyTime kT0 = MetricsTextfile::SteadyTime{} + std::chrono::hours(1);

TEST(MetricsTextfile, WritesOnItsIntervalOnlyWhatMoved) {
  TempDir dir;
  const std::string path = dir.PathOf("tw.prom");
  MetricsTextfile file;
  file.Configure(true, path, seconds(5));
  int renders = 0;
  std::string text = "a 1\n";
  auto render = [&] {
    ++renders;
    return text;
  };
  file.Tick(kT0, 1, render);
  EXPECT_EQ(trainwatch::testing::ReadFile(path), "a 1\n");
  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0644u) << "node_exporter runs as another user";

  text = "a 2\n";
  file.Tick(kT0 + seconds(4), 2, render);
  EXPECT_EQ(renders, 1) << "not due before its interval";
  file.Tick(kT0 + seconds(5), 1, render);
  EXPECT_EQ(renders, 1) << "due, but nothing moved: not even rendered";
  file.Tick(kT0 + seconds(10), 2, render);
  EXPECT_EQ(renders, 2);
  EXPECT_EQ(trainwatch::testing::ReadFile(path), "a 2\n");

  std::filesystem::remove(path);
  file.Tick(kT0 + seconds(15), 2, render);
  EXPECT_EQ(trainwatch::testing::ReadFile(path), "a 2\n") << "a removed file comes back";
}

TEST(MetricsTextfile, AnIdleDaemonRewritesItEveryMinuteAsItsHeartbeat) {
  TempDir dir;
  const std::string path = dir.PathOf("tw.prom");
  MetricsTextfile file;
  file.Configure(true, path, seconds(5));
  int renders = 0;
  auto render = [&] { return "written " + std::to_string(++renders) + "\n"; };
  file.Tick(kT0, 1, render);
  for (int tick = 1; tick < 12; ++tick) {  // 55 s with nothing moving
    file.Tick(kT0 + seconds(5 * tick), 1, render);
  }
  EXPECT_EQ(renders, 1);
  file.Tick(kT0 + seconds(60), 1, render);
  EXPECT_EQ(renders, 2) << "a minute since the last write: written though nothing moved";
  EXPECT_EQ(trainwatch::testing::ReadFile(path), "written 2\n");
  // A write because something moved also counts: the next heartbeat is a minute after it.
  file.Tick(kT0 + seconds(90), 2, render);
  EXPECT_EQ(renders, 3);
  file.Tick(kT0 + seconds(145), 2, render);
  EXPECT_EQ(renders, 3);
  file.Tick(kT0 + seconds(150), 2, render);
  EXPECT_EQ(renders, 4);
}

TEST(MetricsTextfile, AMovedOrDisabledFileIsRemoved) {
  TempDir dir;
  MetricsTextfile file;
  auto render = [] { return std::string("a 1\n"); };
  file.Configure(true, dir.PathOf("old.prom"), seconds(5));
  file.Write(1, render);
  ASSERT_TRUE(std::filesystem::exists(dir.PathOf("old.prom")));

  file.Configure(true, dir.PathOf("new.prom"), seconds(5));
  EXPECT_FALSE(std::filesystem::exists(dir.PathOf("old.prom")));
  file.Tick(kT0, 1, render);
  EXPECT_TRUE(std::filesystem::exists(dir.PathOf("new.prom")));

  file.Configure(false, dir.PathOf("new.prom"), seconds(5));
  EXPECT_FALSE(std::filesystem::exists(dir.PathOf("new.prom")));
  file.Tick(kT0 + seconds(60), 2, render);
  EXPECT_FALSE(std::filesystem::exists(dir.PathOf("new.prom"))) << "disabled";
}

}  // namespace
}  // namespace trainwatch::ops
