#include "core/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/temp_dir.h"

namespace trainwatch {
namespace {

TEST(AtomicFile, ReplacesTheFileWholeAtTheGivenModeWhateverTheUmask) {
  testing::TempDir dir;
  const std::string path = dir.PathOf("tw.prom");
  ASSERT_TRUE(WriteFileAtomically(path, "old 1\n", 0644));
  const mode_t before = ::umask(0077);  // as under the systemd unit
  const Status written = WriteFileAtomically(path, "new 2\n", 0644);
  ::umask(before);
  ASSERT_TRUE(written) << written.error().message;
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "new 2\n");
  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0644u);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));

  const Status unwritable = WriteFileAtomically(dir.PathOf("missing/tw.prom"), "x\n", 0644);
  ASSERT_FALSE(unwritable);
  EXPECT_NE(unwritable.error().message.find("missing/tw.prom.tmp: No such file"), std::string::npos)
      << unwritable.error().message;
}

}  // namespace
}  // namespace trainwatch
