#include "collect/collector_internal.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "support/temp_dir.h"

namespace trainwatch::collect::collector_internal {
namespace {

namespace fs = std::filesystem;
using trainwatch::testing::TempDir;

TEST(CollectorInternalTest, FinishCountsBytesAndSetsTheStatus) {
  struct Case {
    std::size_t asked;
    std::size_t read;
    CollectorStatus status;
  };
  for (const Case& c : std::vector<Case>{{0, 0, CollectorStatus::kSkipped},
                                         {2, 0, CollectorStatus::kFailed},
                                         {2, 1, CollectorStatus::kOk},
                                         {2, 2, CollectorStatus::kOk}}) {
    CollectorResult result;
    AddText(result, "a.txt", "12345");
    AddRange(result, "b.log", "/var/log/b.log", 100, 40);  // its length, not its offset
    Finish(result, SteadyClock::now(), c.asked, c.read);
    EXPECT_EQ(result.status, c.status) << c.asked << " " << c.read;
    EXPECT_EQ(result.bytes, 45u);
    EXPECT_GE(result.duration_seconds, 0);
  }
  CollectorResult nothing;
  Finish(nothing, SteadyClock::now(), 0, 0);
  EXPECT_EQ(nothing.detail, "nothing to collect");
  CollectorResult said;
  AddDetail(said, "no training processes");
  AddDetail(said, "second line");
  Finish(said, SteadyClock::now(), 0, 0);
  EXPECT_EQ(said.detail, "no training processes\nsecond line") << "a reason given is kept";
}

TEST(CollectorInternalTest, HumanBytes) {
  EXPECT_EQ(HumanBytes(0), "0 B");
  EXPECT_EQ(HumanBytes(1023), "1023 B");
  EXPECT_EQ(HumanBytes(1536), "1.5 KiB");
  EXPECT_EQ(HumanBytes(4 << 20), "4.0 MiB");
  EXPECT_EQ(HumanBytes(std::uint64_t{3} << 40), "3.0 TiB");
}

TEST(CollectorInternalTest, ParseNumberTakesOnlyPlainDecimals) {
  EXPECT_EQ(ParseNumber("0"), 0);
  EXPECT_EQ(ParseNumber("4242"), 4242);
  EXPECT_EQ(ParseNumber("999999999"), 999999999);
  for (const char* text : {"", "-1", "+1", "12a", "self", " 1", "1234567890"}) {
    EXPECT_EQ(ParseNumber(text), -1) << "'" << text << "'";
  }
}

TEST(CollectorInternalTest, DirectoriesAndLinks) {
  TempDir dir;
  fs::create_directories(dir.path() / "real" / "sub");
  dir.Write("real/b", "");
  dir.Write("real/a", "");
  fs::create_directory_symlink(dir.path() / "real", dir.path() / "link");

  Result<DirPtr> real = OpenDirAt(AT_FDCWD, dir.PathOf("real"), /*follow=*/false);
  ASSERT_TRUE(real.ok()) << real.error().message;
  EXPECT_EQ(Names(real->get()), (std::vector<std::string>{"a", "b", "sub"}));

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

}  // namespace
}  // namespace trainwatch::collect::collector_internal
