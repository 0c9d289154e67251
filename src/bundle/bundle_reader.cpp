#include "bundle/bundle_reader.h"

#include <memory>

#include "bundle/archive_library.h"

namespace trainwatch::bundle {
namespace {

struct ReaderFree {
  const ArchiveLibrary* api;
  void operator()(archive* reader) const { api->read_free(reader); }
};
using ArchivePtr = std::unique_ptr<archive, ReaderFree>;

// A reader of every format and filter, or why libarchive cannot be loaded.
Result<ArchivePtr> NewReader() {
  Result<const ArchiveLibrary*> api = LoadArchive();
  if (!api) {
    return api.error();
  }
  ArchivePtr reader((*api)->read_new(), ReaderFree{*api});
  (*api)->read_support_filter_all(reader.get());
  (*api)->read_support_format_all(reader.get());
  return reader;
}

std::string ArchiveError(const ArchivePtr& reader, const char* fallback) {
  const char* text = reader.get_deleter().api->error_string(reader.get());
  return text != nullptr ? text : fallback;
}

// The current member's bytes.
Result<std::string> ReadData(const ArchivePtr& reader, const std::string& name) {
  const ArchiveLibrary& api = *reader.get_deleter().api;
  std::string data;
  char buffer[64 * 1024];
  while (true) {
    const la_ssize_t n = api.read_data(reader.get(), buffer, sizeof buffer);
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
Result<std::string> ReadFirstMember(const ArchivePtr& reader, const std::string& name) {
  const ArchiveLibrary& api = *reader.get_deleter().api;
  archive_entry* entry = nullptr;
  if (api.read_next_header(reader.get(), &entry) != ARCHIVE_OK) {
    return Error{name + ": not a readable bundle (" + ArchiveError(reader, "empty") + ")"};
  }
  if (std::string(api.entry_pathname(entry)) != "manifest.json") {
    return Error{name + ": its first member is " + api.entry_pathname(entry) +
                 ", not manifest.json"};
  }
  return ReadData(reader, name);
}

}  // namespace

Result<std::string> ReadManifest(const std::string& bundle_path) {
  Result<ArchivePtr> reader = NewReader();
  if (!reader) {
    return Error{bundle_path + ": " + reader.error().message};
  }
  if (reader->get_deleter().api->read_open_filename(reader->get(), bundle_path.c_str(),
                                                    64 * 1024) != ARCHIVE_OK) {
    return Error{bundle_path + ": " + ArchiveError(*reader, "cannot open it")};
  }
  return ReadFirstMember(*reader, bundle_path);
}

Result<std::string> ReadMember(const std::string& bundle_path, const std::string& member) {
  Result<ArchivePtr> reader = NewReader();
  if (!reader) {
    return Error{bundle_path + ": " + reader.error().message};
  }
  const ArchiveLibrary& api = *reader->get_deleter().api;
  if (api.read_open_filename(reader->get(), bundle_path.c_str(), 64 * 1024) != ARCHIVE_OK) {
    return Error{bundle_path + ": " + ArchiveError(*reader, "cannot open it")};
  }
  archive_entry* entry = nullptr;
  int status = ARCHIVE_OK;
  while ((status = api.read_next_header(reader->get(), &entry)) == ARCHIVE_OK) {
    if (std::string(api.entry_pathname(entry)) == member) {
      return ReadData(*reader, bundle_path);
    }
  }
  if (status != ARCHIVE_EOF) {
    return Error{bundle_path + ": " + ArchiveError(*reader, "not a readable bundle")};
  }
  return Error{bundle_path + ": no " + member + " in it"};
}

Result<std::string> ReadManifestFromMemory(std::string_view bytes, const std::string& name) {
  Result<ArchivePtr> reader = NewReader();
  if (!reader) {
    return Error{name + ": " + reader.error().message};
  }
  if (reader->get_deleter().api->read_open_memory(reader->get(), bytes.data(), bytes.size()) !=
      ARCHIVE_OK) {
    return Error{name + ": " + ArchiveError(*reader, "not a readable bundle")};
  }
  return ReadFirstMember(*reader, name);
}

}  // namespace trainwatch::bundle
