// Opening and streaming an artifact's source file for both passes of the bundle writer (see
// source_file.h): the writer's one reader of files on disk.
#include "bundle/source_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <initializer_list>

#include "bundle/errno_text.h"

namespace trainwatch::bundle {
namespace {

// Reads and redactions go by chunks of this size: a bundle of any size costs a few in memory.
// Bigger buys nothing (zstd and the redactor's prefilter are at full speed already) and costs on
// secret-dense logs, where the redactor runs a pattern's regex over every chunk it flags.
constexpr std::size_t kChunk = std::size_t{1} << 20;

// A private key block is the one secret that spans lines. A BEGIN line near the end of a chunk
// with no END after it moves, with what follows, to the next chunk; a key is a few KiB.
std::size_t KeepKeyBlockWhole(std::string_view text, std::size_t cut) {
  constexpr std::size_t kWindow = std::size_t{16} << 10;
  const std::size_t from = cut > kWindow ? cut - kWindow : 0;
  const std::string_view tail = text.substr(from, cut - from);
  const std::size_t begin = tail.rfind("-----BEGIN ");
  if (begin == std::string_view::npos || tail.find("-----END ", begin) != std::string_view::npos) {
    return cut;
  }
  const std::size_t line = text.rfind('\n', from + begin);
  return line == std::string_view::npos ? cut : line + 1;  // never an empty chunk
}

}  // namespace

Result<SourceFile> OpenSource(const std::string& path) {
  SourceFile file;
  file.fd = UniqueFd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (file.fd.get() < 0) {
    const int error = errno;
    if (error == ELOOP) {
      return Error{path + " is a symlink (not followed)"};
    }
    return Error{(error == ENOENT ? "vanished: " : "cannot open: ") + path + ": " +
                 ErrnoText(error)};
  }
  if (::fstat(file.fd.get(), &file.st) != 0) {
    return Error{"cannot stat " + path + ": " + ErrnoText(errno)};
  }
  if (!S_ISREG(file.st.st_mode)) {
    return Error{path + " is not a regular file"};
  }
  return file;
}

int StreamRange(int fd, std::uint64_t offset, std::uint64_t length,
                const collect::Redactor* redactor, collect::RedactionCounts& counts,
                StreamStats& stats, StreamBuffers& buffers,
                const std::function<bool(std::string_view)>& sink) {
  std::string& text = buffers.text;    // the carried partial line, then the bytes just read
  std::string& carry = buffers.carry;  // swapped with `text` each round: neither reallocated
  text.clear();
  carry.clear();
  std::uint64_t pos = offset;
  const std::uint64_t end = length > UINT64_MAX - offset ? UINT64_MAX : offset + length;
  bool done = false;
  int error = 0;
  while (!done) {
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, end - pos));
    const std::size_t old = text.size();
    text.resize(old + want);
    std::size_t got = 0;
    while (got < want) {
      const ssize_t n =
          ::pread(fd, text.data() + old + got, want - got, static_cast<off_t>(pos + got));
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n < 0) {
        error = errno;
      }
      if (n <= 0) {
        break;
      }
      got += static_cast<std::size_t>(n);
    }
    text.resize(old + got);
    pos += got;
    stats.read += got;
    done = got < want || pos == end;
    std::size_t cut = text.size();
    if (!done && redactor != nullptr) {
      const std::size_t newline = text.rfind('\n');
      if (newline != std::string::npos) {
        cut = KeepKeyBlockWhole(text, newline + 1);
      }
    }
    carry.assign(text, cut, std::string::npos);
    text.resize(cut);
    if (redactor != nullptr && !text.empty()) {
      redactor->RedactText(text, counts);
    }
    if (!text.empty() && !sink(std::string_view(text))) {
      return -1;
    }
    text.swap(carry);
  }
  return error;
}

bool LooksCompressed(int fd) {
  unsigned char head[10] = {};
  ssize_t got = 0;
  do {
    got = ::pread(fd, head, sizeof(head), 0);
  } while (got < 0 && errno == EINTR);
  auto starts = [&](std::initializer_list<unsigned char> magic) {
    return static_cast<std::size_t>(got) >= magic.size() &&
           std::equal(magic.begin(), magic.end(), head);
  };
  const bool bzip2 = starts({'B', 'Z', 'h'}) && got >= 10 && head[3] >= '1' && head[3] <= '9' &&
                     std::equal(head + 4, head + 10, "1AY&SY");
  return got > 0 && (starts({0x1f, 0x8b}) || starts({0xfd, '7', 'z', 'X', 'Z', 0x00}) || bzip2);
}

}  // namespace trainwatch::bundle
