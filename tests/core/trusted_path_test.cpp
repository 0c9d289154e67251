// What a root daemon may load, run or keep its state in: nothing another user could write or
// swap.
#include "core/trusted_path.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "support/temp_dir.h"

namespace trainwatch {
namespace {

using testing::TempDir;

TEST(TrustedPath, SystemDirectoriesAreTrusted) {
  EXPECT_TRUE(CheckTrustedPath("/usr/bin", 0).ok());
  // Writable by all: sticky keeps others from renaming what is below it, so it is a safe
  // ancestor, but nothing in it can be trusted for being there (anyone plants /tmp/gdb).
  EXPECT_FALSE(CheckTrustedPath("/tmp", 0).ok());
  testing::TempDir dir;  // below /tmp, root's, 0755
  ::chmod(dir.path().c_str(), 0755);
  EXPECT_EQ(CheckTrustedPath(dir.path().string(), ::geteuid()).ok(), true);
}

TEST(TrustedPath, AUsersOrAWritableDirectoryIsNot) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "needs root (chown)";
  }
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "mine/bin");
  ::chmod(dir.path().c_str(), 0755);
  EXPECT_TRUE(CheckTrustedPath(dir.PathOf("mine/bin"), 0).ok());
  ::chown(dir.PathOf("mine").c_str(), 4242, 4242);
  Result<std::string> status = CheckTrustedPath(dir.PathOf("mine/bin"), 0);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message.find("mine: owned by uid 4242"), std::string::npos)
      << status.error().message;
  EXPECT_TRUE(CheckTrustedPath(dir.PathOf("mine/bin"), 4242).ok());  // its owner's own
  ::chown(dir.PathOf("mine").c_str(), 0, 4242);
  ::chmod(dir.PathOf("mine").c_str(), 0775);
  status = CheckTrustedPath(dir.PathOf("mine/bin"), 0);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message.find("writable by its group 4242"), std::string::npos)
      << status.error().message;
  ::chown(dir.PathOf("mine").c_str(), 0, 0);  // group root's write bit is an admin's
  EXPECT_TRUE(CheckTrustedPath(dir.PathOf("mine/bin"), 0).ok());
}

TEST(TrustedPath, SearchPathKeepsOnlyTrustedAbsoluteDirectories) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "needs root (chown)";
  }
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "planted");
  ::chmod(dir.path().c_str(), 0755);
  ::chmod(dir.PathOf("planted").c_str(), 0777);
  std::vector<std::string> dropped;
  const std::string kept = TrustedSearchPath(
      "/usr/bin:.:" + dir.PathOf("planted") + ":" + dir.PathOf("absent") + ":bin:/bin", 0, dropped);
  // Each kept as what it resolves to (a link in PATH could be re-pointed), once.
  const std::string usr_bin = std::filesystem::canonical("/usr/bin").string();
  const std::string bin = std::filesystem::canonical("/bin").string();
  EXPECT_EQ(kept, bin == usr_bin ? usr_bin : usr_bin + ":" + bin);
  ASSERT_EQ(dropped.size(), 3u);
  EXPECT_NE(dropped[0].find("relative"), std::string::npos) << dropped[0];
  EXPECT_NE(dropped[1].find("writable by everyone"), std::string::npos) << dropped[1];
}

}  // namespace
}  // namespace trainwatch
