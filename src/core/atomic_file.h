// WriteFileAtomically: replaces a file whole, through a temporary (`path`.tmp unless told
// otherwise) and a rename, so a
// reader (or the daemon itself after a kill -9) sees the old content or the new, never half. No
// fsync: what must survive is a crash of this process, not of the machine. Any thread.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"

namespace trainwatch {

// `mode` is set explicitly, whatever the umask (0077 under the systemd unit): a file meant for
// another user's reader (the metrics textfile) must stay readable. A failed write leaves the
// old file in place and no temporary behind.
// `temporary_suffix`: the temporary is `path` + it; a file that several processes may write at
// once (a cache shared by concurrent `scan`s) needs one of its own per writer.
Status WriteFileAtomically(const std::string& path, std::string_view bytes, unsigned mode,
                           std::string_view temporary_suffix = ".tmp");

}  // namespace trainwatch
