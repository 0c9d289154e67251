// Fuzzes the line framer: a cap and read sizes from the first bytes, then the stream ('\r',
// NUL, invalid UTF-8, lines beyond the cap). Checks what the framer promises: no record is
// longer than the cap, line numbers run on without gaps, and every byte comes out once, in
// order, with '\r' turned into '\n'.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "fuzz/fuzz_input.h"
#include "source/line_framer.h"

namespace {

void Require(bool condition) {
  if (!condition) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  trainwatch::fuzz::FuzzInput input(data, size);
  const std::size_t max_line = 1 + input.TakeByte() % 64;
  const std::size_t chunk = 1 + input.TakeByte() % 128;
  const std::size_t read_size = 1 + input.TakeByte() % 200;
  const bool release = (input.TakeByte() & 1) != 0;
  std::string_view stream = input.rest();
  std::string expected(stream);
  std::replace(expected.begin(), expected.end(), '\r', '\n');

  trainwatch::source::LineFramer framer(max_line, chunk);
  std::string delivered;
  std::uint64_t next_line = 1;  // the first line the next batch may start at
  bool after_cut = false;       // the last batch was a piece: the next may share its number
  while (true) {
    auto space = framer.WritableSpace();
    Require(!space.empty());
    const std::size_t n = std::min({space.size(), stream.size(), read_size});
    std::memcpy(space.data(), stream.data(), n);
    framer.Commit(n);
    stream.remove_prefix(n);
    while (const trainwatch::source::LineBatch* batch = framer.NextBatch(stream.empty())) {
      Require(batch->size() > 0);
      Require(batch->first_line == next_line || (after_cut && batch->first_line + 1 == next_line));
      for (std::size_t i = 0; i < batch->size(); ++i) {
        Require(batch->Begin(i) <= batch->ends[i] && batch->ends[i] <= batch->text.size());
        Require(batch->Record(i).size() <= max_line);
      }
      Require(!batch->cut || batch->size() == 1);
      after_cut = batch->cut;
      next_line = batch->first_line + batch->size();
      delivered.append(batch->text);
    }
    if (release) {
      framer.Release();
    }
    if (stream.empty()) {
      break;
    }
  }
  Require(framer.pending_bytes() == 0);
  // Batches hold their lines' '\n' except the last one of each batch: count what came out
  // against the input, bytes other than separators in order.
  std::string delivered_text;
  std::string expected_text;
  std::copy_if(delivered.begin(), delivered.end(), std::back_inserter(delivered_text),
               [](char c) { return c != '\n'; });
  std::copy_if(expected.begin(), expected.end(), std::back_inserter(expected_text),
               [](char c) { return c != '\n'; });
  Require(delivered_text == expected_text);
  return 0;
}
