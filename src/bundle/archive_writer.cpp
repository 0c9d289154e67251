// The libarchive plumbing of the bundle writer (see archive_writer.h): handles owned on every
// path, a write callback that keeps errno, and members held to their announced size.
#include "bundle/archive_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "bundle/archive_library.h"
#include "bundle/errno_text.h"

namespace trainwatch::bundle {
namespace {

// Padding goes by blocks of this size, so a big file that vanished between the passes costs no
// more memory than reading it did.
constexpr std::size_t kPadBlock = std::size_t{1} << 20;

struct EntryFree {
  const ArchiveLibrary* api;
  void operator()(struct archive_entry* e) const { api->entry_free(e); }
};

}  // namespace

bool ArchiveMember::Write(std::string_view data) {
  const std::uint64_t room = size_ - written_;
  cut_ = cut_ || data.size() > room;
  data = data.substr(0, static_cast<std::size_t>(std::min<std::uint64_t>(room, data.size())));
  while (!data.empty()) {
    const la_ssize_t n = api_->write_data(archive_, data.data(), data.size());
    if (n <= 0) {
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
    written_ += static_cast<std::uint64_t>(n);
  }
  return true;
}

bool ArchiveMember::Pad() {
  if (written_ == size_) {
    return true;
  }
  const std::string newlines(static_cast<std::size_t>(std::min<std::uint64_t>(size_, kPadBlock)),
                             '\n');
  while (written_ < size_) {
    if (!Write(newlines)) {
      return false;
    }
  }
  return true;
}

void ArchiveWriter::ArchiveFree::operator()(struct archive* archive) const {
  api->write_free(archive);
}

bool ArchiveWriter::Output::WriteAll(const void* buffer, std::size_t length) {
  const char* p = static_cast<const char*>(buffer);
  std::size_t left = length;
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      error = n < 0 ? errno : ENOSPC;
      return false;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  bytes += length;
  return true;
}

ArchiveWriter::ArchiveWriter(int fd) {
  output_.fd = fd;
  Result<const ArchiveLibrary*> loaded = LoadArchive();
  if (!loaded) {
    unavailable_ = loaded.error().message;
    return;
  }
  api_ = *loaded;
  archive_ = std::unique_ptr<struct archive, ArchiveFree>(api_->write_new(), ArchiveFree{api_});
}

ArchiveWriter::~ArchiveWriter() = default;

bool ArchiveWriter::SetUp(int level, int threads) {
  if (!archive_) {
    return false;  // ErrorText says why
  }
  struct archive* a = archive_.get();
  if (api_->write_set_format_pax_restricted(a) != ARCHIVE_OK ||
      api_->write_add_filter_zstd(a) != ARCHIVE_OK ||
      api_->write_set_filter_option(a, "zstd", "compression-level",
                                    std::to_string(level).c_str()) != ARCHIVE_OK) {
    return false;
  }
  if (threads > 1) {
    // libarchive 3.6+ built with libzstd knows "threads"; elsewhere this fails and we use one.
    api_->write_set_filter_option(a, "zstd", "threads", std::to_string(threads).c_str());
  }
  // No blocking: the compressed stream goes to the file as zstd emits it, with no zero padding
  // after the last frame.
  api_->write_set_bytes_per_block(a, 0);
  return true;
}

bool ArchiveWriter::Open() {
  // A lambda rather than a free function: only a member may name the private Output.
  auto write = [](struct archive* /*archive*/, void* data, const void* buffer,
                  std::size_t length) -> la_ssize_t {
    return static_cast<Output*>(data)->WriteAll(buffer, length) ? static_cast<la_ssize_t>(length)
                                                                : -1;
  };
  return api_->write_open2(archive_.get(), &output_, nullptr, write, nullptr, nullptr) ==
         ARCHIVE_OK;
}

std::optional<ArchiveMember> ArchiveWriter::AddMember(const std::string& path, std::uint64_t size,
                                                      std::time_t mtime) {
  std::unique_ptr<struct archive_entry, EntryFree> entry(api_->entry_new(), EntryFree{api_});
  api_->entry_set_pathname_utf8(entry.get(), path.c_str());
  api_->entry_set_filetype(entry.get(), AE_IFREG);
  api_->entry_set_perm(entry.get(), 0600);
  api_->entry_set_size(entry.get(), static_cast<la_int64_t>(size));
  api_->entry_set_mtime(entry.get(), mtime, 0);
  api_->entry_set_uid(entry.get(), ::getuid());
  api_->entry_set_gid(entry.get(), ::getgid());
  if (api_->write_header(archive_.get(), entry.get()) < ARCHIVE_WARN) {
    return std::nullopt;
  }
  return ArchiveMember(api_, archive_.get(), size);
}

bool ArchiveWriter::Close() { return api_->write_close(archive_.get()) == ARCHIVE_OK; }

std::string ArchiveWriter::ErrorText() const {
  if (!archive_) {
    return unavailable_;
  }
  if (output_.error != 0) {
    return ErrnoText(output_.error);
  }
  const char* message = api_->error_string(archive_.get());
  return message != nullptr ? message : ErrnoText(errno);
}

}  // namespace trainwatch::bundle
