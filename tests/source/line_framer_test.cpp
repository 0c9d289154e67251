#include "source/line_framer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace trainwatch::source {
namespace {

struct Record {
  std::uint64_t line;
  std::string text;  // with '\r' already turned into '\n'
  bool cut;
  bool operator==(const Record&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Record& r) {
  return os << "{" << r.line << ", \"" << r.text << "\", " << r.cut << "}";
}

// Feeds `input` `read_size` bytes at a time, as a file read would, and collects every record.
std::vector<Record> Frame(const std::string& input, std::size_t read_size,
                          std::size_t max_line = 64, std::size_t chunk = 256) {
  LineFramer framer(max_line, chunk);
  std::vector<Record> records;
  auto drain = [&](bool eof) {
    while (const LineBatch* batch = framer.NextBatch(eof)) {
      for (std::size_t i = 0; i < batch->size(); ++i) {
        records.push_back({batch->LineNumber(i), std::string(batch->Record(i)), batch->cut});
      }
    }
  };
  std::size_t pos = 0;
  while (pos < input.size()) {
    auto space = framer.WritableSpace();
    const std::size_t n = std::min({space.size(), read_size, input.size() - pos});
    std::memcpy(space.data(), input.data() + pos, n);
    framer.Commit(n);
    pos += n;
    drain(false);
  }
  drain(true);
  return records;
}

TEST(LineFramer, NumbersLinesByNewline) {
  for (std::size_t read_size : {1, 3, 7, 1000}) {
    EXPECT_EQ(
        Frame("a\nbb\n\nccc\n", read_size),
        (std::vector<Record>{{1, "a", false}, {2, "bb", false}, {3, "", false}, {4, "ccc", false}}))
        << "read size " << read_size;
  }
}

TEST(LineFramer, DeliversUnterminatedLastLineAtEnd) {
  EXPECT_EQ(Frame("one\ntwo", 2), (std::vector<Record>{{1, "one", false}, {2, "two", false}}));
}

TEST(LineFramer, EmptyInputHasNoLines) { EXPECT_TRUE(Frame("", 10).empty()); }

TEST(LineFramer, CarriageReturnsBecomeSegmentBreaksWithoutCountingLines) {
  const auto records = Frame("\r 10%|#\r 20%|##\rTraceback\nnext\n", 5);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0], (Record{1, "\n 10%|#\n 20%|##\nTraceback", false}));
  EXPECT_EQ(records[1].line, 2u);
}

TEST(LineFramer, CutsOverlongLinesIntoFlaggedPiecesOfAtMostTheCap) {
  const std::string long_line(200, 'x');
  const auto records = Frame("short\n" + long_line + "\nafter\n", 13, /*max_line=*/64);
  ASSERT_GE(records.size(), 5u);
  EXPECT_EQ(records.front(), (Record{1, "short", false}));
  std::string rebuilt;
  for (std::size_t i = 1; i + 1 < records.size(); ++i) {
    EXPECT_EQ(records[i].line, 2u);
    EXPECT_TRUE(records[i].cut);
    EXPECT_LE(records[i].text.size(), 64u);
    rebuilt += records[i].text;
  }
  EXPECT_EQ(rebuilt, long_line);  // nothing lost, nothing repeated
  EXPECT_EQ(records.back(), (Record{3, "after", false}));
}

TEST(LineFramer, ALineOfExactlyTheCapIsNotCutWhateverTheReads) {
  const std::string line(64, 'x');
  for (std::size_t read_size : {1, 7, 64, 65, 1000}) {
    EXPECT_EQ(Frame(line + "\nnext\n", read_size, /*max_line=*/64),
              (std::vector<Record>{{1, line, false}, {2, "next", false}}))
        << "read size " << read_size;
  }
}

TEST(LineFramer, CutsProgressStreamsAfterACarriageReturn) {
  // A tqdm stream that never ends its line: pieces end at update boundaries.
  std::string stream;
  for (int i = 0; i < 30; ++i) {
    stream += '\r';
    stream += std::to_string(i);
    stream += "%|bar|";
  }
  const auto records = Frame(stream, 16, /*max_line=*/40);
  ASSERT_GT(records.size(), 1u);
  for (std::size_t i = 0; i + 1 < records.size(); ++i) {
    EXPECT_EQ(records[i].text.back(), '\n') << records[i];  // the '\r' that ended the piece
    EXPECT_TRUE(records[i].cut);
  }
}

TEST(LineFramer, UnterminatedHugeLineIsDeliveredBeforeEndOfInput) {
  // Memory stays bounded: a 1 MB line with no newline must flow out in pieces while it is
  // still being read, not pile up until the end.
  LineFramer framer(/*max_line_bytes=*/1024, /*chunk_bytes=*/4096);
  std::size_t delivered = 0;
  for (int i = 0; i < 256; ++i) {
    auto space = framer.WritableSpace();
    ASSERT_LE(space.size(), 4096u + 1024u + 1u);
    const std::size_t n = std::min<std::size_t>(space.size(), 4096);
    std::memset(space.data(), 'y', n);
    framer.Commit(n);
    while (const LineBatch* batch = framer.NextBatch()) {
      ASSERT_TRUE(batch->cut);
      delivered += batch->Record(0).size();
    }
  }
  EXPECT_GE(delivered, 256u * 4096u - 1024u);  // at most one cap of it still pending
}

TEST(LineFramer, KeepsNulAndInvalidUtf8Bytes) {
  const std::string input("a\0b\xff\xfe\n", 6);
  const auto records = Frame(input, 2);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].text, std::string("a\0b\xff\xfe", 5));
}

TEST(LineBatch, SegmentHelpers) {
  LineFramer framer;
  const std::string input = "\r 10%|#\r 20%|##\rTraceback here\r\nplain\n";
  auto space = framer.WritableSpace();
  std::memcpy(space.data(), input.data(), input.size());
  framer.Commit(input.size());
  const LineBatch* batch = framer.NextBatch();
  ASSERT_NE(batch, nullptr);
  ASSERT_EQ(batch->size(), 2u);
  EXPECT_EQ(batch->LastSegment(0), "Traceback here");  // CRLF's '\r' leaves an empty tail
  EXPECT_EQ(batch->LastSegment(1), "plain");
  const std::size_t at = batch->text.find("20%");
  EXPECT_EQ(batch->SegmentAt(at), " 20%|##");
  EXPECT_EQ(batch->RecordAt(batch->text.find("plain")), 1u);
}

}  // namespace
}  // namespace trainwatch::source
