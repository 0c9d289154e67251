// Opening what a job, a rank or a peer names: never through a last link (or any link, when
// asked), never a FIFO where a file is expected (and never blocking on one), never another
// user's file, never past the cap, never out of a process's root.
#include "core/untrusted_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "support/temp_dir.h"

namespace trainwatch {
namespace {

using testing::TempDir;

TEST(UntrustedFile, ReadsTheFileItNamesWithinItsCap) {
  TempDir dir;
  const std::string path = dir.Write("a", "0123456789");
  UntrustedPath how;
  Result<UntrustedText> text = ReadUntrusted(path, how, 4);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ(text->text, "0123");
  EXPECT_TRUE(text->truncated);
  how.max_size = 4;
  Result<UntrustedText> refused = ReadUntrusted(path, how, 100);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("10 bytes, over the cap of 4"), std::string::npos)
      << refused.error().message;
}

TEST(UntrustedFile, NeverFollowsTheLastLink) {
  TempDir dir;
  const std::string secret = dir.Write("secret", "x");
  std::filesystem::create_symlink(secret, dir.PathOf("link"));
  Result<UntrustedText> text = ReadUntrusted(dir.PathOf("link"), UntrustedPath{}, 100);
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.error().message.find("symbolic link"), std::string::npos) << text.error().message;
}

TEST(UntrustedFile, NoSymlinksRefusesALinkAnywhereInThePath) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "real");
  dir.Write("real/f", "x");
  std::filesystem::create_directory_symlink(dir.path() / "real", dir.PathOf("via"));
  UntrustedPath how;
  EXPECT_TRUE(ReadUntrusted(dir.PathOf("via/f"), how, 10).ok());  // only the last is refused
  how.no_symlinks = true;
  EXPECT_FALSE(ReadUntrusted(dir.PathOf("via/f"), how, 10).ok());
  EXPECT_TRUE(ReadUntrusted(dir.PathOf("real/f"), how, 10).ok());
}

TEST(UntrustedFile, AFifoIsRefusedWithoutBlocking) {
  TempDir dir;
  ASSERT_EQ(::mkfifo(dir.PathOf("fifo").c_str(), 0600), 0);
  Result<UntrustedText> text = ReadUntrusted(dir.PathOf("fifo"), UntrustedPath{}, 100);
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.error().message.find("is a FIFO, not a regular file"), std::string::npos)
      << text.error().message;
  // Where a FIFO is expected, it opens without blocking even with no one at the other end.
  UntrustedPath fifo;
  fifo.type = S_IFIFO;
  EXPECT_TRUE(OpenUntrusted(dir.PathOf("fifo"), fifo, O_RDONLY).ok());
}

TEST(UntrustedFile, AnotherUsersFileIsRefused) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "giving a file to another user needs root";
  }
  TempDir dir;
  const std::string path = dir.Write("theirs", "x");
  ASSERT_EQ(::chown(path.c_str(), ::geteuid() + 4242, -1), 0);
  UntrustedPath how;
  how.owner = ::geteuid();
  Result<UntrustedText> text = ReadUntrusted(path, how, 10);
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.error().message.find("owned by uid"), std::string::npos) << text.error().message;
}

TEST(UntrustedFile, InARootNoLinkLeadsOut) {
  TempDir dir;
  const std::string secret = dir.Write("secret", "host's");
  std::filesystem::create_directories(dir.path() / "root/tmp");
  dir.Write("root/tmp/own", "the root's own");
  std::filesystem::create_directory_symlink("/", dir.PathOf("root/tmp/top"));
  std::filesystem::create_directory_symlink("../../..", dir.PathOf("root/tmp/up"));
  const UniqueFd root(::open(dir.PathOf("root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  UntrustedPath how;
  how.dir_fd = root.get();
  how.in_root = true;
  Result<UntrustedText> own = ReadUntrusted("/tmp/top/tmp/own", how, 100);
  ASSERT_TRUE(own.ok()) << own.error().message;  // "/" is the root's own
  EXPECT_EQ(own->text, "the root's own");
  // Relative to the root's descriptor, so that each of these would reach the host's secret if
  // links and ".." were resolved from the host's "/" (they are without RESOLVE_IN_ROOT).
  // "tmp/up" is the parent of the test's directory, seen from the host.
  const std::string via_up = "tmp/up/" + dir.path().filename().string() + "/secret";
  std::string to_host_root;
  for (int i = 0; i < 16; ++i) {
    to_host_root += "../";
  }
  EXPECT_FALSE(ReadUntrusted("tmp/top" + secret, how, 100).ok());
  EXPECT_FALSE(ReadUntrusted(via_up, how, 100).ok());
  EXPECT_FALSE(ReadUntrusted(to_host_root + secret.substr(1), how, 100).ok());
  UntrustedPath host = how;  // the same paths, resolved as a plain openat would: they escape
  host.in_root = false;
  host.follow_last_link = true;
  EXPECT_TRUE(ReadUntrusted("tmp/top" + secret, host, 100).ok()) << "the escape is real";
  EXPECT_TRUE(ReadUntrusted(via_up, host, 100).ok()) << "the escape is real";
  EXPECT_TRUE(ReadUntrusted(to_host_root + secret.substr(1), host, 100).ok());
}

}  // namespace
}  // namespace trainwatch
