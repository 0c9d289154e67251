#include "bundle/bundle_reader.h"

#include <archive.h>
#include <archive_entry.h>

#include <memory>

namespace trainwatch::bundle {
namespace {

using ArchivePtr = std::unique_ptr<archive, decltype(&archive_read_free)>;

ArchivePtr NewReader() {
  ArchivePtr reader(archive_read_new(), &archive_read_free);
  archive_read_support_filter_all(reader.get());
  archive_read_support_format_all(reader.get());
  return reader;
}

std::string ArchiveError(archive* reader, const char* fallback) {
  const char* text = archive_error_string(reader);
  return text != nullptr ? text : fallback;
}

// The manifest of the opened bundle `reader`; `name` names it in errors.
Result<std::string> ReadFirstMember(archive* reader, const std::string& name) {
  archive_entry* entry = nullptr;
  if (archive_read_next_header(reader, &entry) != ARCHIVE_OK) {
    return Error{name + ": not a readable bundle (" + ArchiveError(reader, "empty") + ")"};
  }
  if (std::string(archive_entry_pathname(entry)) != "manifest.json") {
    return Error{name + ": its first member is " + archive_entry_pathname(entry) +
                 ", not manifest.json"};
  }
  std::string manifest;
  char buffer[64 * 1024];
  while (true) {
    const la_ssize_t n = archive_read_data(reader, buffer, sizeof buffer);
    if (n < 0) {
      return Error{name + ": " + archive_error_string(reader)};
    }
    if (n == 0) {
      break;
    }
    manifest.append(buffer, static_cast<std::size_t>(n));
  }
  return manifest;
}

}  // namespace

Result<std::string> ReadManifest(const std::string& bundle_path) {
  ArchivePtr reader = NewReader();
  if (archive_read_open_filename(reader.get(), bundle_path.c_str(), 64 * 1024) != ARCHIVE_OK) {
    return Error{bundle_path + ": " + archive_error_string(reader.get())};
  }
  return ReadFirstMember(reader.get(), bundle_path);
}

Result<std::string> ReadManifestFromMemory(std::string_view bytes, const std::string& name) {
  ArchivePtr reader = NewReader();
  if (archive_read_open_memory(reader.get(), bytes.data(), bytes.size()) != ARCHIVE_OK) {
    return Error{name + ": " + archive_error_string(reader.get())};
  }
  return ReadFirstMember(reader.get(), name);
}

}  // namespace trainwatch::bundle
