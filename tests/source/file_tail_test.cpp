#include "source/file_tail.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/temp_dir.h"

namespace trainwatch::source {

// In the namespace of TailPosition, for gtest to find them.
inline bool operator==(const TailPosition& a, const TailPosition& b) {
  return a.offset == b.offset && a.next_line == b.next_line;
}
inline std::ostream& operator<<(std::ostream& os, const TailPosition& p) {
  return os << "{offset " << p.offset << ", next_line " << p.next_line << "}";
}
inline std::ostream& operator<<(std::ostream& os, const Fingerprint& f) {
  return os << "{length " << f.length << ", hash " << f.hash << "}";
}

namespace {

namespace fs = std::filesystem;

constexpr std::size_t kSmallChunk = 16;
constexpr std::size_t kBigBudget = 1 << 30;

struct Record {
  std::uint64_t offset;  // file offset of the record's first byte
  std::uint64_t line;
  std::string text;
  bool operator==(const Record&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Record& r) {
  return os << "{" << r.offset << ", " << r.line << ", \"" << r.text << "\"}";
}

// Collects what a FileTail hands its sink: every record with the file offset it starts at
// (batch_offset + its place in the batch), and each batch's offset and size.
struct Collector {
  std::vector<Record> records;
  std::vector<std::uint64_t> batch_offsets;
  std::vector<std::size_t> batch_sizes;

  FileTail::Sink Sink() {
    return [this](const LineBatch& batch, std::uint64_t batch_offset) {
      batch_offsets.push_back(batch_offset);
      batch_sizes.push_back(batch.text.size());
      for (std::size_t i = 0; i < batch.size(); ++i) {
        records.push_back(
            {batch_offset + batch.Begin(i), batch.LineNumber(i), std::string(batch.Record(i))});
      }
    };
  }
  // Everything collected so far, forgotten.
  std::vector<Record> Take() {
    batch_offsets.clear();
    batch_sizes.clear();
    return std::exchange(records, {});
  }
};

void Append(const std::string& path, std::string_view text) {
  std::ofstream(path, std::ios::binary | std::ios::app) << text;
}

// Truncates `path` in place (same inode, as copytruncate and `> file` do) and writes `text`.
void Rewrite(const std::string& path, std::string_view text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

FileTail OpenTail(const std::string& path, std::optional<TailPosition> start,
                  std::size_t chunk = kSmallChunk) {
  Result<FileTail> tail = FileTail::Open(path, start, chunk);
  EXPECT_TRUE(tail.ok()) << (tail.ok() ? "" : tail.error().message);
  return std::move(tail).value();
}

TEST(FileTail, ReadsAppendedLinesWithTheirOffsetsAndLineNumbers) {
  testing::TempDir dir;
  const std::string path = dir.Write("train.log", "");
  FileTail tail = OpenTail(path, TailPosition{0, 1});
  Collector got;

  Append(path, "alpha\nbeta\n");
  FileTail::ReadOutcome outcome = tail.Read(kBigBudget, got.Sink());
  EXPECT_EQ(outcome.bytes, 11u);
  EXPECT_FALSE(outcome.more);
  EXPECT_FALSE(outcome.truncated);
  EXPECT_TRUE(outcome.error.empty()) << outcome.error;
  EXPECT_EQ(got.batch_offsets, (std::vector<std::uint64_t>{0}));
  EXPECT_EQ(got.Take(), (std::vector<Record>{{0, 1, "alpha"}, {6, 2, "beta"}}));
  EXPECT_EQ(tail.position(), (TailPosition{11, 3}));

  Append(path, "gamma\n\ndelta\n");
  outcome = tail.Read(kBigBudget, got.Sink());
  EXPECT_EQ(outcome.bytes, 13u);
  EXPECT_FALSE(outcome.truncated);
  EXPECT_EQ(got.batch_offsets, (std::vector<std::uint64_t>{11}));
  EXPECT_EQ(got.Take(), (std::vector<Record>{{11, 3, "gamma"}, {17, 4, ""}, {18, 5, "delta"}}));
  EXPECT_EQ(tail.position(), (TailPosition{24, 6}));
  EXPECT_EQ(tail.read_offset(), 24u);
}

TEST(FileTail, BatchOffsetsStayRightWhenAReadEndsMidLine) {
  // Budgets that end reads in the middle of lines: each batch's offset is still the file
  // offset of its first byte, whatever was left pending before it.
  const std::string text = "first line\nsecond\nthird one here\nx\nlast line of all\n";
  const std::vector<Record> expected = {{0, 1, "first line"},
                                        {11, 2, "second"},
                                        {18, 3, "third one here"},
                                        {33, 4, "x"},
                                        {35, 5, "last line of all"}};
  for (std::size_t budget : {1, 3, 7, 13, 1000}) {
    testing::TempDir dir;
    const std::string path = dir.Write("train.log", text);
    FileTail tail = OpenTail(path, TailPosition{0, 1});
    Collector got;
    for (int reads = 0; reads < 1000; ++reads) {
      if (tail.Read(budget, got.Sink()).bytes == 0) {
        break;
      }
    }
    EXPECT_EQ(got.records, expected) << "budget " << budget;
    for (std::size_t i = 0; i < got.batch_offsets.size(); ++i) {
      // A batch starts at the start of a line: right after a '\n', or at 0.
      const std::uint64_t at = got.batch_offsets[i];
      EXPECT_TRUE(at == 0 || text[at - 1] == '\n') << "budget " << budget << " offset " << at;
    }
    EXPECT_EQ(tail.position(), (TailPosition{text.size(), 6})) << "budget " << budget;
  }
}

TEST(FileTail, HoldsAnUnterminatedLineUntilItsNewlineArrives) {
  testing::TempDir dir;
  const std::string path = dir.Write("train.log", "one\ntw");
  FileTail tail = OpenTail(path, TailPosition{0, 1});
  Collector got;

  EXPECT_EQ(tail.Read(kBigBudget, got.Sink()).bytes, 6u);
  EXPECT_EQ(got.Take(), (std::vector<Record>{{0, 1, "one"}}));
  EXPECT_EQ(tail.position(), (TailPosition{4, 2}));  // stops before the unfinished line
  EXPECT_EQ(tail.read_offset(), 6u);
  EXPECT_EQ(tail.pending(), "tw");

  Append(path, "o ");
  EXPECT_EQ(tail.Read(kBigBudget, got.Sink()).bytes, 2u);
  EXPECT_TRUE(got.Take().empty());
  EXPECT_EQ(tail.position(), (TailPosition{4, 2}));
  EXPECT_EQ(tail.pending(), "two ");

  Append(path, "halves\nthree\n");
  tail.Read(kBigBudget, got.Sink());
  EXPECT_EQ(got.Take(), (std::vector<Record>{{4, 2, "two halves"}, {15, 3, "three"}}));
  EXPECT_EQ(tail.position(), (TailPosition{21, 4}));
  EXPECT_EQ(tail.pending(), "");
}

TEST(FileTail, PendingShowsCarriageReturnsAsWritten) {
  testing::TempDir dir;
  const std::string path = dir.Write("train.log", "\r 10%|#\r 20%|##");
  FileTail tail = OpenTail(path, TailPosition{0, 1});
  Collector got;
  tail.Read(kBigBudget, got.Sink());
  EXPECT_TRUE(got.records.empty());
  EXPECT_EQ(tail.pending(), "\r 10%|#\r 20%|##");
}

TEST(FileTail, ResumesFromAStartPositionWithItsLineNumbers) {
  testing::TempDir dir;
  const std::string path = dir.Write("train.log", "one\ntwo\nthree\n");
  FileTail tail = OpenTail(path, TailPosition{8, 3});
  EXPECT_EQ(tail.position(), (TailPosition{8, 3}));
  Collector got;
  tail.Read(kBigBudget, got.Sink());
  Append(path, "four\n");
  tail.Read(kBigBudget, got.Sink());
  EXPECT_EQ(got.records, (std::vector<Record>{{8, 3, "three"}, {14, 4, "four"}}));
  EXPECT_EQ(tail.position(), (TailPosition{19, 5}));
}

TEST(FileTail, StartPastTheEndOfAShorterFileStartsOver) {
  // Truncated while the daemon was stopped: the saved offset is past the end.
  testing::TempDir dir;
  const std::string path = dir.Write("train.log", "new\n");
  FileTail tail = OpenTail(path, TailPosition{100, 40});
  EXPECT_EQ(tail.position(), (TailPosition{0, 1}));
  Collector got;
  tail.Read(kBigBudget, got.Sink());
  EXPECT_EQ(got.records, (std::vector<Record>{{0, 1, "new"}}));
}

TEST(FileTail, OpenWithoutAPositionStartsAtTheEnd) {
  testing::TempDir dir;
  const std::string path = dir.Write("train.log", "old line\nold unfinished");
  FileTail tail = OpenTail(path, std::nullopt);
  EXPECT_EQ(tail.position(), (TailPosition{23, 1}));
  Collector got;
  EXPECT_EQ(tail.Read(kBigBudget, got.Sink()).bytes, 0u);
  EXPECT_TRUE(got.records.empty());

  // The end is a line boundary: the rest of the unfinished line reads as a line of its own,
  // and numbering starts at 1 from where the tail opened.
  Append(path, " rest\nnew line\n");
  tail.Read(kBigBudget, got.Sink());
  EXPECT_EQ(got.records, (std::vector<Record>{{23, 1, " rest"}, {29, 2, "new line"}}));
  EXPECT_EQ(tail.position(), (TailPosition{38, 3}));
}

TEST(FileTail, TruncationToASmallerSizeRestartsAtZero) {
  testing::TempDir dir;
  const std::string path = dir.Write("train.log", "aaaa\nbbbb\ncc");
  FileTail tail = OpenTail(path, TailPosition{0, 1});
  Collector got;
  tail.Read(kBigBudget, got.Sink());
  got.Take();
  ASSERT_EQ(tail.position(), (TailPosition{10, 3}));
  ASSERT_EQ(tail.pending(), "cc");

  Rewrite(path, "new\n");
  const FileTail::ReadOutcome outcome = tail.Read(kBigBudget, got.Sink());
  EXPECT_TRUE(outcome.truncated);
  EXPECT_TRUE(outcome.error.empty()) << outcome.error;
  EXPECT_EQ(outcome.bytes, 4u);
  EXPECT_EQ(tail.before_truncation(), (TailPosition{10, 3}));
  // The partial "cc" of the old content is dropped, not glued to the new first line.
  EXPECT_EQ(got.Take(), (std::vector<Record>{{0, 1, "new"}}));
  EXPECT_EQ(tail.position(), (TailPosition{4, 2}));
  EXPECT_EQ(tail.pending(), "");

  // Growing again is no new truncation.
  Append(path, "more\n");
  EXPECT_FALSE(tail.Read(kBigBudget, got.Sink()).truncated);
  EXPECT_EQ(got.Take(), (std::vector<Record>{{4, 2, "more"}}));
}

TEST(FileTail, TruncationToEmptyIsReportedOnce) {
  testing::TempDir dir;
  const std::string path = dir.Write("train.log", "line\n");
  FileTail tail = OpenTail(path, TailPosition{0, 1});
  Collector got;
  tail.Read(kBigBudget, got.Sink());
  got.Take();

  Rewrite(path, "");
  EXPECT_TRUE(tail.Read(kBigBudget, got.Sink()).truncated);
  EXPECT_EQ(tail.before_truncation(), (TailPosition{5, 2}));
  EXPECT_EQ(tail.position(), (TailPosition{0, 1}));
  EXPECT_FALSE(tail.Read(kBigBudget, got.Sink()).truncated);

  Append(path, "again\n");
  EXPECT_FALSE(tail.Read(kBigBudget, got.Sink()).truncated);
  EXPECT_EQ(got.Take(), (std::vector<Record>{{0, 1, "again"}}));
}

TEST(FileTail, RewrittenFileLargerThanTheOffsetIsATruncation) {
  // copytruncate under a busy writer: between two reads the file is copied, truncated and
  // refilled past our offset. Its size looks fine; its first bytes give it away.
  testing::TempDir dir;
  const std::string path = dir.Write("train.log", "first line\n");
  FileTail tail = OpenTail(path, TailPosition{0, 1});
  Collector got;
  tail.Read(kBigBudget, got.Sink());
  got.Take();
  ASSERT_EQ(tail.position(), (TailPosition{11, 2}));

  Rewrite(path, "other line\nsecond line\n");
  const FileTail::ReadOutcome outcome = tail.Read(kBigBudget, got.Sink());
  EXPECT_TRUE(outcome.truncated);
  EXPECT_EQ(tail.before_truncation(), (TailPosition{11, 2}));
  EXPECT_EQ(got.Take(), (std::vector<Record>{{0, 1, "other line"}, {11, 2, "second line"}}));
  EXPECT_EQ(tail.position(), (TailPosition{23, 3}));
  EXPECT_EQ(tail.fingerprint(), FingerprintOf("other line\nsecond line\n"));
}

TEST(FileTail, RewriteIsNoticedWhenOpenedMidFile) {
  // Resumed from a saved position, the tail knows the first bytes it found at open.
  testing::TempDir dir;
  const std::string path = dir.Write("train.log", "header A\nbody\n");
  FileTail tail = OpenTail(path, TailPosition{9, 2});
  Rewrite(path, "header B\nbody\nmore\n");
  Collector got;
  EXPECT_TRUE(tail.Read(kBigBudget, got.Sink()).truncated);
  EXPECT_EQ(tail.before_truncation(), (TailPosition{9, 2}));
  EXPECT_EQ(got.records,
            (std::vector<Record>{{0, 1, "header B"}, {9, 2, "body"}, {14, 3, "more"}}));
}

TEST(FileTail, KeepsItsChunkSizeAfterATruncation) {
  // Every read hands over at most chunk + max line + 1 bytes; the framer that replaces the
  // old one after a truncation should be sized like the one Open made.
  std::string text;
  for (int i = 0; text.size() < 3 * kDefaultMaxLineBytes; ++i) {
    text += "line " + std::to_string(i) + "\n";
  }
  testing::TempDir dir;
  const std::string path = dir.Write("train.log", "before\n");
  FileTail tail = OpenTail(path, TailPosition{0, 1}, kSmallChunk);
  Collector got;
  tail.Read(kBigBudget, got.Sink());
  got.Take();

  Rewrite(path, text);
  ASSERT_TRUE(tail.Read(kBigBudget, got.Sink()).truncated);
  for (std::size_t size : got.batch_sizes) {
    EXPECT_LE(size, kSmallChunk + kDefaultMaxLineBytes + 1);
  }
  EXPECT_GE(got.batch_sizes.size(), 3u);
}

TEST(FileTail, RenamedFileIsStillReadFromTheSameDescriptor) {
  testing::TempDir dir;
  const std::string path = dir.Write("train.log", "");
  FileTail tail = OpenTail(path, TailPosition{0, 1});
  const FileId id = tail.id();
  Collector got;
  Append(path, "before rename\n");
  tail.Read(kBigBudget, got.Sink());

  const std::string rotated = dir.PathOf("train.log.1");
  ASSERT_EQ(std::rename(path.c_str(), rotated.c_str()), 0);
  Append(rotated, "after rename\n");  // the writer's descriptor follows the inode
  dir.Write("train.log", "a new file under the old name\n");

  const FileTail::ReadOutcome outcome = tail.Read(kBigBudget, got.Sink());
  EXPECT_FALSE(outcome.truncated);
  EXPECT_TRUE(outcome.error.empty()) << outcome.error;
  EXPECT_EQ(got.records, (std::vector<Record>{{0, 1, "before rename"}, {14, 2, "after rename"}}));
  EXPECT_EQ(tail.path(), path);  // the owner renames it with set_path() when it knows
  EXPECT_EQ(tail.id(), id);
  struct stat info {};
  ASSERT_EQ(::stat(rotated.c_str(), &info), 0);
  EXPECT_EQ(tail.id(), (FileId{info.st_dev, info.st_ino}));
}

TEST(FileTail, DeletedFileIsFinishedFromTheSameDescriptor) {
  testing::TempDir dir;
  const std::string path = dir.Write("train.log", "");
  const int writer = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  ASSERT_GE(writer, 0);
  FileTail tail = OpenTail(path, TailPosition{0, 1});
  ASSERT_EQ(::unlink(path.c_str()), 0);
  const std::string last = "last words\n";
  ASSERT_EQ(::write(writer, last.data(), last.size()), static_cast<ssize_t>(last.size()));
  ::close(writer);

  Collector got;
  tail.Read(kBigBudget, got.Sink());
  EXPECT_EQ(got.records, (std::vector<Record>{{0, 1, "last words"}}));
}

TEST(FileTail, FlushDeliversTheUnterminatedLastLine) {
  testing::TempDir dir;
  const std::string path = dir.Write("train.log", "done\nkilled mid-li");
  FileTail tail = OpenTail(path, TailPosition{0, 1});
  Collector got;
  tail.Read(kBigBudget, got.Sink());
  EXPECT_EQ(got.Take(), (std::vector<Record>{{0, 1, "done"}}));

  tail.Flush(got.Sink());
  EXPECT_EQ(got.batch_offsets, (std::vector<std::uint64_t>{5}));
  EXPECT_EQ(got.Take(), (std::vector<Record>{{5, 2, "killed mid-li"}}));
  EXPECT_EQ(tail.pending(), "");
  EXPECT_EQ(tail.position(), (TailPosition{18, 3}));

  tail.Flush(got.Sink());  // nothing left
  EXPECT_TRUE(got.records.empty());
}

TEST(FileTail, ReadStopsAtTheBudgetAndSaysThereIsMore) {
  std::string text;
  for (int i = 10; i < 60; ++i) {
    text += "line " + std::to_string(i) + "\n";  // 8 bytes each
  }
  testing::TempDir dir;
  const std::string path = dir.Write("train.log", text);
  FileTail tail = OpenTail(path, TailPosition{0, 1});
  Collector got;

  FileTail::ReadOutcome outcome = tail.Read(20, got.Sink());
  EXPECT_EQ(outcome.bytes, 20u);
  EXPECT_TRUE(outcome.more);
  EXPECT_EQ(got.Take(), (std::vector<Record>{{0, 1, "line 10"}, {8, 2, "line 11"}}));
  EXPECT_EQ(tail.read_offset(), 20u);
  EXPECT_EQ(tail.position(), (TailPosition{16, 3}));
  EXPECT_EQ(tail.pending(), "line");

  outcome = tail.Read(kBigBudget, got.Sink());
  EXPECT_EQ(outcome.bytes, text.size() - 20);
  EXPECT_FALSE(outcome.more);
  const std::vector<Record> rest = got.Take();
  ASSERT_EQ(rest.size(), 48u);
  EXPECT_EQ(rest.front(), (Record{16, 3, "line 12"}));
  EXPECT_EQ(rest.back(), (Record{392, 50, "line 59"}));
  EXPECT_EQ(tail.position(), (TailPosition{400, 51}));
}

TEST(FileTail, OpenFailsOnAMissingPathOrADirectory) {
  testing::TempDir dir;
  const std::string missing = dir.PathOf("missing.log");
  Result<FileTail> tail = FileTail::Open(missing, std::nullopt, kSmallChunk);
  ASSERT_FALSE(tail.ok());
  EXPECT_NE(tail.error().message.find(missing), std::string::npos) << tail.error().message;

  Result<FileTail> directory = FileTail::Open(dir.path().string(), std::nullopt, kSmallChunk);
  ASSERT_FALSE(directory.ok());
  EXPECT_NE(directory.error().message.find("not a regular file"), std::string::npos)
      << directory.error().message;
}

TEST(Fingerprint, IsFnv1aOfTheBytes) {
  EXPECT_EQ(FingerprintOf(""), (Fingerprint{0, 14695981039346656037ull}));
  EXPECT_EQ(FingerprintOf("a"), (Fingerprint{1, 0xaf63dc4c8601ec8cull}));
  EXPECT_EQ(FingerprintOf("foobar"), (Fingerprint{6, 0x85944171f73967e8ull}));
  EXPECT_NE(FingerprintOf("ab").hash, FingerprintOf("ba").hash);
}

TEST(Fingerprint, ReadFingerprintCoversTheFirstBytesOrNothing) {
  testing::TempDir dir;
  const std::string path = dir.Write("train.log", "hello world\n");
  Result<std::unique_ptr<ReadableFile>> file = RealFileSystem().OpenForReading(path);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(ReadFingerprint(**file, 5), FingerprintOf("hello"));
  EXPECT_EQ(ReadFingerprint(**file, 12), FingerprintOf("hello world\n"));
  EXPECT_EQ(ReadFingerprint(**file, 0), FingerprintOf(""));
  EXPECT_EQ(ReadFingerprint(**file, 13), std::nullopt);  // the file is shorter
}

TEST(Fingerprint, TailFingerprintGrowsWithTheFileUpToHeadBytes) {
  testing::TempDir dir;
  const std::string path = dir.Write("train.log", "ab\n");
  FileTail tail = OpenTail(path, std::nullopt);
  EXPECT_EQ(tail.fingerprint(), FingerprintOf("ab\n"));

  const std::string more(400, 'x');
  Append(path, more + "\n");
  Collector got;
  tail.Read(kBigBudget, got.Sink());
  const std::string whole = "ab\n" + more + "\n";
  EXPECT_EQ(tail.fingerprint(), FingerprintOf(whole.substr(0, Fingerprint::kHeadBytes)));
  EXPECT_EQ(tail.fingerprint().length, Fingerprint::kHeadBytes);
}

}  // namespace
}  // namespace trainwatch::source
