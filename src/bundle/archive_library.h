// libarchive, loaded at run time (core/shared_library.h) the first time a bundle is written or
// read, not linked: linked, it and the libraries it brings (libxml2 with ICU, nettle, lzma,
// lz4, bz2, acl) are resident in every daemon, which writes a bundle only when a job fails.
// The functions the bundle writer and reader call, from libarchive.so.13 (Debian's
// libarchive13, a Depends of the package). Any thread once loaded (the table is immutable).
#pragma once

#include <archive.h>
#include <archive_entry.h>

#include "core/result.h"

namespace trainwatch::bundle {

struct ArchiveLibrary {
  decltype(&archive_write_new) write_new = nullptr;
  decltype(&archive_write_free) write_free = nullptr;
  decltype(&archive_write_set_format_pax_restricted) write_set_format_pax_restricted = nullptr;
  decltype(&archive_write_add_filter_zstd) write_add_filter_zstd = nullptr;
  decltype(&archive_write_set_filter_option) write_set_filter_option = nullptr;
  decltype(&archive_write_set_bytes_per_block) write_set_bytes_per_block = nullptr;
  decltype(&archive_write_open2) write_open2 = nullptr;
  decltype(&archive_write_header) write_header = nullptr;
  decltype(&archive_write_data) write_data = nullptr;
  decltype(&archive_write_close) write_close = nullptr;
  decltype(&archive_read_new) read_new = nullptr;
  decltype(&archive_read_free) read_free = nullptr;
  decltype(&archive_read_support_filter_all) read_support_filter_all = nullptr;
  decltype(&archive_read_support_format_all) read_support_format_all = nullptr;
  decltype(&archive_read_open_filename) read_open_filename = nullptr;
  decltype(&archive_read_open_memory) read_open_memory = nullptr;
  decltype(&archive_read_next_header) read_next_header = nullptr;
  decltype(&archive_read_data) read_data = nullptr;
  decltype(&archive_error_string) error_string = nullptr;
  decltype(&archive_entry_new) entry_new = nullptr;
  decltype(&archive_entry_free) entry_free = nullptr;
  decltype(&archive_entry_pathname) entry_pathname = nullptr;
  decltype(&archive_entry_set_pathname_utf8) entry_set_pathname_utf8 = nullptr;
  decltype(&archive_entry_set_filetype) entry_set_filetype = nullptr;
  decltype(&archive_entry_set_perm) entry_set_perm = nullptr;
  decltype(&archive_entry_set_size) entry_set_size = nullptr;
  decltype(&archive_entry_set_mtime) entry_set_mtime = nullptr;
  decltype(&archive_entry_set_uid) entry_set_uid = nullptr;
  decltype(&archive_entry_set_gid) entry_set_gid = nullptr;
};

// The library, loaded at the first call (thread-safe); the same table after. Fails, saying
// why, when libarchive.so.13 or one of its functions is missing.
Result<const ArchiveLibrary*> LoadArchive();

}  // namespace trainwatch::bundle
