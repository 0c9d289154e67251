#include "bundle/source_file.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/temp_dir.h"

namespace trainwatch::bundle {
namespace {

using testing::TempDir;

// Numbered lines, so any lost, doubled or reordered byte shows.
std::string Lines(std::size_t bytes) {
  std::string text;
  for (int i = 0; text.size() < bytes; ++i) {
    text += "step ";
    text += std::to_string(i);
    text += " loss 0.25 lr 3e-4\n";
  }
  return text;
}

struct Streamed {
  int rc = 0;
  std::uint64_t read = 0;
  std::vector<std::string> chunks;
  std::string Joined() const {
    std::string all;
    for (const std::string& chunk : chunks) {
      all += chunk;
    }
    return all;
  }
};

Streamed Stream(const std::string& path, std::uint64_t offset, std::uint64_t length,
                const collect::Redactor* redactor) {
  Result<SourceFile> file = OpenSource(path);
  EXPECT_TRUE(file.ok()) << file.error().message;
  Streamed out;
  if (!file.ok()) {
    return out;
  }
  collect::RedactionCounts counts;
  StreamStats stats;
  StreamBuffers buffers;
  out.rc = StreamRange(file->fd.get(), offset, length, redactor, counts, stats, buffers,
                       [&out](std::string_view chunk) {
                         out.chunks.emplace_back(chunk);
                         return true;
                       });
  out.read = stats.read;
  return out;
}

TEST(SourceFileTest, UnredactedRangeIsCopiedInBoundedChunks) {
  TempDir temp;
  const std::string text = Lines(std::size_t{3} << 20);
  const std::string path = temp.Write("train.log", text);
  const Streamed out = Stream(path, 7, text.size() - 7, nullptr);
  EXPECT_EQ(out.rc, 0);
  EXPECT_EQ(out.read, text.size() - 7);
  EXPECT_EQ(out.Joined(), text.substr(7));
  EXPECT_GT(out.chunks.size(), 2u);  // memory stays bounded whatever the file weighs
}

TEST(SourceFileTest, AShortFileEndsTheRangeWithoutAnError) {
  TempDir temp;
  const std::string path = temp.Write("short.log", "only this\n");
  const Streamed out = Stream(path, 5, 100, nullptr);
  EXPECT_EQ(out.rc, 0);
  EXPECT_EQ(out.read, 5u);
  EXPECT_EQ(out.Joined(), "this\n");
}

// Both passes must cut redacted text at the same places, and never inside a secret: every chunk
// but the last ends a line, and a private key block across a chunk edge reaches one chunk whole.
TEST(SourceFileTest, RedactedChunksEndAtLineEndsAndKeepKeyBlocksWhole) {
  Result<std::shared_ptr<const collect::Redactor>> redactor = collect::Redactor::Create();
  ASSERT_TRUE(redactor.ok()) << redactor.error().message;
  TempDir temp;
  std::string text = Lines((std::size_t{1} << 20) - 300);
  const std::size_t key_at = text.size();
  text += "-----BEGIN PRIVATE KEY-----\n";
  for (int line = 0; line < 30; ++line) {
    text += "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC";
    text += std::to_string(line);
    text += "\n";
  }
  text += "-----END PRIVATE KEY-----\n";
  text += Lines(std::size_t{1} << 20);
  const std::string path = temp.Write("keys.log", text);

  const Streamed plain = Stream(path, 0, text.size(), nullptr);
  ASSERT_EQ(plain.Joined(), text);
  ASSERT_GT(plain.chunks.front().size(), key_at);  // the key does straddle the first edge

  const Streamed out = Stream(path, 0, text.size(), redactor->get());
  EXPECT_EQ(out.rc, 0);
  EXPECT_EQ(out.read, text.size());
  ASSERT_GT(out.chunks.size(), 1u);
  for (std::size_t i = 0; i + 1 < out.chunks.size(); ++i) {
    EXPECT_EQ(out.chunks[i].back(), '\n') << i;
  }
  EXPECT_EQ(out.Joined().find("MIIEv"), std::string::npos);
  EXPECT_EQ(Stream(path, 0, text.size(), redactor->get()).chunks, out.chunks);  // repeatable
}

TEST(SourceFileTest, ASinkThatRefusesStopsTheStream) {
  TempDir temp;
  const std::string text = Lines(std::size_t{3} << 20);
  Result<SourceFile> file = OpenSource(temp.Write("train.log", text));
  ASSERT_TRUE(file.ok()) << file.error().message;
  collect::RedactionCounts counts;
  StreamStats stats;
  int calls = 0;
  StreamBuffers buffers;
  const int rc = StreamRange(file->fd.get(), 0, text.size(), nullptr, counts, stats, buffers,
                             [&calls](std::string_view) { return ++calls < 1; });
  EXPECT_EQ(rc, -1);
  EXPECT_EQ(calls, 1);
  EXPECT_LT(stats.read, text.size());
}

}  // namespace
}  // namespace trainwatch::bundle
