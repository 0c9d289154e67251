#include "bundle/archive_library.h"

#include "core/shared_library.h"

namespace trainwatch::bundle {
namespace {

Result<const ArchiveLibrary*> Load() {
  Result<SharedLibrary> library = SharedLibrary::Open("libarchive.so.13", "libarchive13");
  if (!library) {
    return library.error();
  }
  static ArchiveLibrary api;
  SharedLibrary& l = *library;
  const bool found =
      l.Find("archive_write_new", api.write_new) && l.Find("archive_write_free", api.write_free) &&
      l.Find("archive_write_set_format_pax_restricted", api.write_set_format_pax_restricted) &&
      l.Find("archive_write_add_filter_zstd", api.write_add_filter_zstd) &&
      l.Find("archive_write_set_filter_option", api.write_set_filter_option) &&
      l.Find("archive_write_set_bytes_per_block", api.write_set_bytes_per_block) &&
      l.Find("archive_write_open2", api.write_open2) &&
      l.Find("archive_write_header", api.write_header) &&
      l.Find("archive_write_data", api.write_data) &&
      l.Find("archive_write_close", api.write_close) && l.Find("archive_read_new", api.read_new) &&
      l.Find("archive_read_free", api.read_free) &&
      l.Find("archive_read_support_filter_all", api.read_support_filter_all) &&
      l.Find("archive_read_support_format_all", api.read_support_format_all) &&
      l.Find("archive_read_open_filename", api.read_open_filename) &&
      l.Find("archive_read_open_memory", api.read_open_memory) &&
      l.Find("archive_read_next_header", api.read_next_header) &&
      l.Find("archive_read_data", api.read_data) &&
      l.Find("archive_error_string", api.error_string) &&
      l.Find("archive_entry_new", api.entry_new) && l.Find("archive_entry_free", api.entry_free) &&
      l.Find("archive_entry_pathname", api.entry_pathname) &&
      l.Find("archive_entry_set_pathname_utf8", api.entry_set_pathname_utf8) &&
      l.Find("archive_entry_set_filetype", api.entry_set_filetype) &&
      l.Find("archive_entry_set_perm", api.entry_set_perm) &&
      l.Find("archive_entry_set_size", api.entry_set_size) &&
      l.Find("archive_entry_set_mtime", api.entry_set_mtime) &&
      l.Find("archive_entry_set_uid", api.entry_set_uid) &&
      l.Find("archive_entry_set_gid", api.entry_set_gid);
  if (!found) {
    return Error{l.MissingError()};
  }
  return &api;
}

}  // namespace

Result<const ArchiveLibrary*> LoadArchive() {
  static const Result<const ArchiveLibrary*> loaded = Load();  // thread-safe (magic static)
  return loaded;
}

}  // namespace trainwatch::bundle
