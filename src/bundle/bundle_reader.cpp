#include "bundle/bundle_reader.h"

#include <archive.h>
#include <archive_entry.h>

#include <memory>

namespace trainwatch::bundle {

Result<std::string> ReadManifest(const std::string& bundle_path) {
  std::unique_ptr<archive, decltype(&archive_read_free)> reader(archive_read_new(),
                                                                &archive_read_free);
  archive_read_support_filter_all(reader.get());
  archive_read_support_format_all(reader.get());
  if (archive_read_open_filename(reader.get(), bundle_path.c_str(), 64 * 1024) != ARCHIVE_OK) {
    return Error{bundle_path + ": " + archive_error_string(reader.get())};
  }
  archive_entry* entry = nullptr;
  if (archive_read_next_header(reader.get(), &entry) != ARCHIVE_OK) {
    return Error{bundle_path + ": not a readable bundle (" +
                 std::string(archive_error_string(reader.get()) ? archive_error_string(reader.get())
                                                                : "empty") +
                 ")"};
  }
  if (std::string(archive_entry_pathname(entry)) != "manifest.json") {
    return Error{bundle_path + ": its first member is " + archive_entry_pathname(entry) +
                 ", not manifest.json"};
  }
  std::string manifest;
  char buffer[64 * 1024];
  while (true) {
    const la_ssize_t n = archive_read_data(reader.get(), buffer, sizeof buffer);
    if (n < 0) {
      return Error{bundle_path + ": " + archive_error_string(reader.get())};
    }
    if (n == 0) {
      break;
    }
    manifest.append(buffer, static_cast<std::size_t>(n));
  }
  return manifest;
}

}  // namespace trainwatch::bundle
