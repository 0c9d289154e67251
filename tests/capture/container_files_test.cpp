// The copies of a containerised rank's files gdb reads: made once per file, reused, bounded,
// and the image's debug information taken from inside its root, never through a link out of it.
#include "capture/container_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "support/file_text.h"
#include "support/temp_dir.h"

namespace trainwatch::capture {
namespace {

using trainwatch::testing::TempDir;
namespace fs = std::filesystem;

std::size_t Entries(const std::string& dir) {
  return static_cast<std::size_t>(
      std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

TEST(CopyOfExecutable, CopiesOnceReadOnlyInAPrivateFolderAndReusesTheCopy) {
  TempDir dir;
  std::ofstream(dir.PathOf("python3.11")) << "an interpreter";
  const std::string cache = dir.PathOf("cache");
  Result<std::string> copy = CopyOfExecutable(dir.PathOf("python3.11"), cache);
  ASSERT_TRUE(copy) << copy.error().message;
  EXPECT_EQ(trainwatch::testing::ReadFile(*copy), "an interpreter");
  struct stat info {};
  ASSERT_EQ(::stat(cache.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0700u) << "root's alone";
  ASSERT_EQ(::stat(copy->c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0400u);
  Result<std::string> again = CopyOfExecutable(dir.PathOf("python3.11"), cache);
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *copy) << "the same file: the same copy";
  EXPECT_EQ(Entries(cache), 1u);
}

TEST(CopyOfExecutable, RefusesWhatIsNoRegularFileAndForgetsOnlyCopiesUnusedAWhile) {
  TempDir dir;
  ::mkfifo(dir.PathOf("fifo").c_str(), 0600);
  Result<std::string> fifo = CopyOfExecutable(dir.PathOf("fifo"), dir.PathOf("cache"));
  ASSERT_FALSE(fifo);
  EXPECT_NE(fifo.error().message.find("not a regular file"), std::string::npos);
  EXPECT_FALSE(CopyOfExecutable(dir.PathOf("absent"), dir.PathOf("cache")));
  // One capture of many images: every copy stays while in use.
  const std::size_t many = kMaxContainerFileCopies + 3;
  for (std::size_t i = 0; i < many; ++i) {
    const std::string exe = dir.PathOf("exe" + std::to_string(i));
    std::ofstream(exe) << i;
    ASSERT_TRUE(CopyOfExecutable(exe, dir.PathOf("cache")));
  }
  EXPECT_EQ(Entries(dir.PathOf("cache")), many);
  // An hour later they are idle: the next copy leaves the newest of them.
  const auto hour_ago = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (const auto& entry : fs::directory_iterator(dir.PathOf("cache"))) {
    fs::last_write_time(entry.path(), hour_ago);
  }
  std::ofstream(dir.PathOf("new")) << "new";
  ASSERT_TRUE(CopyOfExecutable(dir.PathOf("new"), dir.PathOf("cache")));
  EXPECT_EQ(Entries(dir.PathOf("cache")), kMaxContainerFileCopies + 1);
}

TEST(CopyOfDebugInfo, TakesTheImagesOwnFileAndNeverFollowsALinkOutOfItsRoot) {
  TempDir image;
  const std::string id = "2dd439c6335b443668ce8099c87b26a093da08b0";
  const fs::path build_ids = image.path() / "usr/lib/debug/.build-id/2d";
  fs::create_directories(build_ids);
  std::ofstream(build_ids / (id.substr(2) + ".debug")) << "DWARF";
  TempDir cache;
  Result<std::string> folder = CopyOfDebugInfo(image.path().string(), id, cache.PathOf("c"));
  ASSERT_TRUE(folder) << folder.error().message;
  EXPECT_EQ(trainwatch::testing::ReadFile(*folder + "/.build-id/2d/" + id.substr(2) + ".debug"),
            "DWARF");
  // The image's link to a host file resolves inside the image, where there is nothing.
  TempDir host;
  std::ofstream(host.PathOf("secret")) << "host only";
  const std::string other = "ab" + id.substr(2);
  fs::create_directories(image.path() / "usr/lib/debug/.build-id/ab");
  fs::create_symlink(host.PathOf("secret"),
                     image.path() / "usr/lib/debug/.build-id/ab" / (id.substr(2) + ".debug"));
  EXPECT_FALSE(CopyOfDebugInfo(image.path().string(), other, cache.PathOf("c")));
  EXPECT_FALSE(CopyOfDebugInfo(image.path().string(), "ffff", cache.PathOf("c")))
      << "an image without it";
  EXPECT_FALSE(CopyOfDebugInfo(image.path().string(), "../../etc", cache.PathOf("c")))
      << "not a build id";
}

}  // namespace
}  // namespace trainwatch::capture
