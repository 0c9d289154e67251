#include "source/tail_state.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "support/fake_file_system.h"
#include "support/temp_dir.h"

namespace trainwatch::source {
namespace {

namespace fs = std::filesystem;

void ExpectSameTail(const SavedTail& got, const SavedTail& want, std::size_t index) {
  EXPECT_EQ(got.source, want.source) << index;
  EXPECT_EQ(got.path, want.path) << index;
  EXPECT_EQ(got.id, want.id) << index;
  EXPECT_EQ(got.fingerprint.length, want.fingerprint.length) << index;
  EXPECT_EQ(got.fingerprint.hash, want.fingerprint.hash) << index;
  EXPECT_EQ(got.position.offset, want.position.offset) << index;
  EXPECT_EQ(got.position.next_line, want.position.next_line) << index;
}

TailState SampleState() {
  TailState state;
  state.tails.push_back({"train", "/var/log/job/train.log", FileId{2049, 131077},
                         Fingerprint{256, 0xfedcba9876543210ull}, TailPosition{1048576, 20001}});
  state.tails.push_back({"train", "/var/log/job/train.log.1", FileId{2049, 131078},
                         Fingerprint{17, 42}, TailPosition{0, 1}});
  state.tails.push_back({"habana", "/tmp/hl logs/\"quoted\" ünïcode.log", FileId{66306, 7},
                         Fingerprint{0, 14695981039346656037ull},
                         TailPosition{0xffffffffffull, 123456789}});
  return state;
}

TEST(TailState, SaveThenLoadGivesBackEveryField) {
  testing::TempDir dir;
  const std::string file = dir.PathOf("state.json");
  const TailState saved = SampleState();
  ASSERT_TRUE(SaveTailState(file, saved).ok());

  Result<LoadedTailState> loaded = LoadTailState(file);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_FALSE(loaded->first_start);
  ASSERT_EQ(loaded->state.tails.size(), saved.tails.size());
  for (std::size_t i = 0; i < saved.tails.size(); ++i) {
    ExpectSameTail(loaded->state.tails[i], saved.tails[i], i);
  }
}

TEST(TailState, EmptyStateRoundTripsAndIsNotAFirstStart) {
  testing::TempDir dir;
  const std::string file = dir.PathOf("state.json");
  ASSERT_TRUE(SaveTailState(file, TailState{}).ok());
  Result<LoadedTailState> loaded = LoadTailState(file);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_FALSE(loaded->first_start);
  EXPECT_TRUE(loaded->state.tails.empty());
}

TEST(TailState, SavingAgainReplacesTheWholeState) {
  testing::TempDir dir;
  const std::string file = dir.PathOf("state.json");
  ASSERT_TRUE(SaveTailState(file, SampleState()).ok());
  TailState smaller;
  smaller.tails.push_back(
      {"kmsg", "/dev/kmsg", FileId{5, 6}, Fingerprint{1, 2}, TailPosition{3, 4}});
  ASSERT_TRUE(SaveTailState(file, smaller).ok());

  Result<LoadedTailState> loaded = LoadTailState(file);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  ASSERT_EQ(loaded->state.tails.size(), 1u);
  ExpectSameTail(loaded->state.tails[0], smaller.tails[0], 0);
}

TEST(TailState, MissingFileIsAFirstStartWithNoTails) {
  testing::TempDir dir;
  Result<LoadedTailState> loaded = LoadTailState(dir.PathOf("never-written.json"));
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_TRUE(loaded->first_start);
  EXPECT_TRUE(loaded->state.tails.empty());
}

struct BadFile {
  std::string name;
  std::string text;
  std::string says;  // part of the message besides the file name
};

TEST(TailState, UnreadableContentIsAnErrorNamingTheFile) {
  const std::vector<BadFile> cases = {
      {"garbage", "this is not json", "not a trainwatch state file"},
      {"half written", R"({"version":1,"tails":[{"source":"train","pa)",
       "not a trainwatch state file"},
      {"empty", "", "not a trainwatch state file"},
      {"missing field",
       R"({"version":1,"tails":[{"source":"s","path":"p","dev":1,"ino":2,"head_bytes":3,)"
       R"("head_hash":4,"offset":5}]})",
       "not a trainwatch state file"},
      {"wrong type",
       R"({"version":1,"tails":[{"source":"s","path":"p","dev":"one","ino":2,"head_bytes":3,)"
       R"("head_hash":4,"offset":5,"next_line":6}]})",
       "not a trainwatch state file"},
      {"newer version", R"({"version":2,"tails":[]})", "unknown state version"},
      {"no version", R"({"tails":[]})", "unknown state version"},
  };
  for (const BadFile& c : cases) {
    testing::TempDir dir;
    const std::string file = dir.Write("state.json", c.text);
    Result<LoadedTailState> loaded = LoadTailState(file);
    ASSERT_FALSE(loaded.ok()) << c.name;
    const std::string& message = loaded.error().message;
    EXPECT_TRUE(message.starts_with(file + ": ")) << c.name << ": " << message;
    EXPECT_NE(message.find(c.says), std::string::npos) << c.name << ": " << message;
  }
}

TEST(TailState, FileIsPrivateAndNoTemporaryIsLeftBehind) {
  testing::TempDir dir;
  const std::string file = dir.PathOf("state.json");
  ASSERT_TRUE(SaveTailState(file, SampleState()).ok());
  ASSERT_TRUE(SaveTailState(file, SampleState()).ok());  // over an existing state too

  struct stat info {};
  ASSERT_EQ(::stat(file.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0600u);
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    names.push_back(entry.path().filename().string());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"state.json"}));
}

TEST(TailState, SavingIntoAMissingDirectoryFailsAndNamesThePath) {
  testing::TempDir dir;
  const std::string file = dir.PathOf("no/such/dir/state.json");
  Status saved = SaveTailState(file, SampleState());
  ASSERT_FALSE(saved.ok());
  EXPECT_NE(saved.error().message.find(file), std::string::npos) << saved.error().message;
}

TEST(TailState, IsReadThroughTheFileSeamAndAFailedReadNamesTheFile) {
  trainwatch::testing::FakeFileSystem files;
  files.MakeDirs("/state");
  const std::string file = "/state/offsets.json";
  Result<LoadedTailState> none = LoadTailState(file, files);
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_TRUE(none->first_start);

  ASSERT_TRUE(SaveTailState(file, SampleState(), files).ok());
  Result<LoadedTailState> loaded = LoadTailState(file, files);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_FALSE(loaded->first_start);
  ASSERT_EQ(loaded->state.tails.size(), SampleState().tails.size());
  ExpectSameTail(loaded->state.tails[2], SampleState().tails[2], 2);

  files.FailOpens(file, EIO);  // the file is there but cannot be read: not a first start
  Result<LoadedTailState> failed = LoadTailState(file, files);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().message.find(file), std::string::npos) << failed.error().message;
}

TEST(TailState, AFileFarLargerThanAnyStateIsRefusedUnread) {
  trainwatch::testing::FakeFileSystem files;
  files.MakeDirs("/state");
  files.Append("/state/offsets.json", std::string(33u << 20, ' '));
  Result<LoadedTailState> loaded = LoadTailState("/state/offsets.json", files);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.error().message.find("more than"), std::string::npos) << loaded.error().message;
}

}  // namespace
}  // namespace trainwatch::source
