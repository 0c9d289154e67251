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

// The current member's bytes.
Result<std::string> ReadData(archive* reader, const std::string& name) {
  std::string data;
  char buffer[64 * 1024];
  while (true) {
    const la_ssize_t n = archive_read_data(reader, buffer, sizeof buffer);
    if (n < 0) {
      return Error{name + ": " + ArchiveError(reader, "unreadable")};
    }
    if (n == 0) {
      break;
    }
    data.append(buffer, static_cast<std::size_t>(n));
  }
  return data;
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
  return ReadData(reader, name);
}

}  // namespace

Result<std::string> ReadManifest(const std::string& bundle_path) {
  ArchivePtr reader = NewReader();
  if (archive_read_open_filename(reader.get(), bundle_path.c_str(), 64 * 1024) != ARCHIVE_OK) {
    return Error{bundle_path + ": " + archive_error_string(reader.get())};
  }
  return ReadFirstMember(reader.get(), bundle_path);
}

Result<std::string> ReadMember(const std::string& bundle_path, const std::string& member) {
  ArchivePtr reader = NewReader();
  if (archive_read_open_filename(reader.get(), bundle_path.c_str(), 64 * 1024) != ARCHIVE_OK) {
    return Error{bundle_path + ": " + ArchiveError(reader.get(), "cannot open it")};
  }
  archive_entry* entry = nullptr;
  int status = ARCHIVE_OK;
  while ((status = archive_read_next_header(reader.get(), &entry)) == ARCHIVE_OK) {
    if (std::string(archive_entry_pathname(entry)) == member) {
      return ReadData(reader.get(), bundle_path);
    }
  }
  if (status != ARCHIVE_EOF) {
    return Error{bundle_path + ": " + ArchiveError(reader.get(), "not a readable bundle")};
  }
  return Error{bundle_path + ": no " + member + " in it"};
}

Result<std::string> ReadManifestFromMemory(std::string_view bytes, const std::string& name) {
  ArchivePtr reader = NewReader();
  if (archive_read_open_memory(reader.get(), bytes.data(), bytes.size()) != ARCHIVE_OK) {
    return Error{name + ": " + archive_error_string(reader.get())};
  }
  return ReadFirstMember(reader.get(), name);
}

}  // namespace trainwatch::bundle
