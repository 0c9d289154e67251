// The copy of a containerised rank's executable gdb reads: made once per file, reused, bounded.
#include "capture/container_executable.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support/file_text.h"
#include "support/temp_dir.h"

namespace trainwatch::capture {
namespace {

using trainwatch::testing::TempDir;
namespace fs = std::filesystem;

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
  EXPECT_EQ(std::distance(fs::directory_iterator(cache), fs::directory_iterator()), 1);
}

TEST(CopyOfExecutable, RefusesWhatIsNoRegularFileAndKeepsOnlyTheNewestCopies) {
  TempDir dir;
  ::mkfifo(dir.PathOf("fifo").c_str(), 0600);
  Result<std::string> fifo = CopyOfExecutable(dir.PathOf("fifo"), dir.PathOf("cache"));
  ASSERT_FALSE(fifo);
  EXPECT_NE(fifo.error().message.find("not a regular file"), std::string::npos);
  EXPECT_FALSE(CopyOfExecutable(dir.PathOf("absent"), dir.PathOf("cache")));
  for (std::size_t i = 0; i < kMaxExecutableCopies + 3; ++i) {
    const std::string exe = dir.PathOf("exe" + std::to_string(i));
    std::ofstream(exe) << i;
    ASSERT_TRUE(CopyOfExecutable(exe, dir.PathOf("cache")));
  }
  EXPECT_EQ(static_cast<std::size_t>(std::distance(fs::directory_iterator(dir.PathOf("cache")),
                                                   fs::directory_iterator())),
            kMaxExecutableCopies);
}

}  // namespace
}  // namespace trainwatch::capture
