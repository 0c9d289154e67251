#include "core/directory.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "support/temp_dir.h"

namespace trainwatch {
namespace {

namespace fs = std::filesystem;
using trainwatch::testing::TempDir;

TEST(Directory, ParseDecimalNameTakesOnlyPlainDecimals) {
  EXPECT_EQ(ParseDecimalName("0"), 0);
  EXPECT_EQ(ParseDecimalName("4242"), 4242);
  EXPECT_EQ(ParseDecimalName("999999999"), 999999999);
  for (const char* text : {"", "-1", "+1", "12a", "self", " 1", "1234567890"}) {
    EXPECT_EQ(ParseDecimalName(text), -1) << "'" << text << "'";
  }
}

TEST(Directory, OpensDirectoriesWithOrWithoutFollowingLinks) {
  TempDir dir;
  fs::create_directories(dir.path() / "real" / "sub");
  dir.Write("real/b", "");
  dir.Write("real/a", "");
  fs::create_directory_symlink(dir.path() / "real", dir.path() / "link");

  Result<DirPtr> real = OpenDirAt(AT_FDCWD, dir.PathOf("real"), /*follow=*/false);
  ASSERT_TRUE(real.ok()) << real.error().message;
  EXPECT_EQ(DirNames(real->get()), (std::vector<std::string>{"a", "b", "sub"}));

  Result<DirPtr> followed = OpenDirAt(AT_FDCWD, dir.PathOf("link"), /*follow=*/true);
  ASSERT_TRUE(followed.ok()) << followed.error().message;
  Result<DirPtr> refused = OpenDirAt(AT_FDCWD, dir.PathOf("link"), /*follow=*/false);
  ASSERT_FALSE(refused.ok());
  // O_DIRECTORY is checked on the link itself before O_NOFOLLOW would say ELOOP.
  EXPECT_EQ(refused.error().message, "Not a directory");

  Result<std::string> target = ReadLinkAt(AT_FDCWD, dir.PathOf("link"));
  ASSERT_TRUE(target.ok()) << target.error().message;
  EXPECT_EQ(*target, (dir.path() / "real").string());
  Result<std::string> not_link = ReadLinkAt(AT_FDCWD, dir.PathOf("real/a"));
  ASSERT_FALSE(not_link.ok());
  EXPECT_EQ(not_link.error().message, dir.PathOf("real/a") + ": Invalid argument");
}

TEST(Directory, ForEachProcessVisitsThePidDirectoriesOnly) {
  TempDir proc;  // a /proc root as the tests' fake ones are: pid directories among others
  for (const char* name : {"1", "42", "self", "sys", "0", "4242x"}) {
    fs::create_directories(proc.path() / name);
  }
  std::vector<int> pids;
  const Status walked =
      ForEachProcess(proc.PathOf(""), [&](int proc_fd, int pid, const char* name) {
        EXPECT_EQ(std::to_string(pid), name);
        EXPECT_GE(proc_fd, 0);
        pids.push_back(pid);
      });
  ASSERT_TRUE(walked.ok()) << walked.error().message;
  std::sort(pids.begin(), pids.end());
  EXPECT_EQ(pids, (std::vector<int>{1, 42}));

  const Status missing = ForEachProcess(proc.PathOf("none"), [](int, int, const char*) {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, "No such file or directory");
}

}  // namespace
}  // namespace trainwatch
