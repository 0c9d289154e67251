// PosixFileSystem::OpenForReading on what a user may put where a log is expected: the object
// is checked before it is opened for reading, so opening a device or a FIFO never happens (it
// may act: /dev/watchdog arms a reboot, a FIFO releases its blocked writer). Seen through
// inotify's IN_OPEN, which an O_PATH open does not raise and a real open does.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "core/file_system.h"
#include "core/unique_fd.h"
#include "support/temp_dir.h"

namespace trainwatch {
namespace {

// Whether `path` was opened (for reading or writing) since the watch began.
class OpenWatch {
 public:
  explicit OpenWatch(const std::string& path) : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
    ::inotify_add_watch(fd_.get(), path.c_str(), IN_OPEN);
  }
  bool opened() const {
    alignas(inotify_event) char buffer[4096];
    return ::read(fd_.get(), buffer, sizeof buffer) > 0;
  }

 private:
  UniqueFd fd_;
};

TEST(PosixFileSystem, ALogLinkedToAFifoIsRefusedWithoutOpeningIt) {
  testing::TempDir dir;
  const std::string fifo = dir.PathOf("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string log = dir.PathOf("train.log");
  ASSERT_EQ(::symlink(fifo.c_str(), log.c_str()), 0);
  const OpenWatch watch(fifo);
  Result<std::unique_ptr<ReadableFile>> file = RealFileSystem().OpenForReading(log);
  ASSERT_FALSE(file);
  EXPECT_NE(file.error().message.find("is a FIFO, not a regular file"), std::string::npos)
      << file.error().message;
  EXPECT_FALSE(watch.opened()) << "the FIFO was opened: its writer would have been released";
}

TEST(PosixFileSystem, ALogThroughALinkIsOpenedAndRead) {
  testing::TempDir dir;
  const std::string real = dir.PathOf("run-7.log");
  std::ofstream(real) << "step 1\n";
  const std::string log = dir.PathOf("train.log");
  ASSERT_EQ(::symlink(real.c_str(), log.c_str()), 0);
  const OpenWatch watch(real);
  Result<std::unique_ptr<ReadableFile>> file = RealFileSystem().OpenForReading(log);
  ASSERT_TRUE(file) << file.error().message;
  char head[6] = {};
  Result<std::size_t> n = (*file)->ReadAt(0, head);
  ASSERT_TRUE(n);
  EXPECT_EQ(std::string(head, *n), "step 1");
  EXPECT_TRUE(watch.opened()) << "a regular file is opened for reading, once checked";
}

TEST(PosixFileSystem, ADirectoryIsNoLog) {
  testing::TempDir dir;
  Result<std::unique_ptr<ReadableFile>> file = RealFileSystem().OpenForReading(dir.path().string());
  ASSERT_FALSE(file);
  EXPECT_NE(file.error().message.find("is a directory, not a regular file"), std::string::npos)
      << file.error().message;
}

}  // namespace
}  // namespace trainwatch
