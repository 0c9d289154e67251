// Whether a path can be trusted by a daemon that runs as root: what it loads (a gdb helper),
// runs (a tool on PATH) or keeps its state in must be out of every other user's reach. That is
// the path itself and every directory above it: owned by root or the daemon's own user, and
// writable by nobody else — a directory writable by others counts only where its sticky bit
// keeps them from renaming what they do not own (/tmp). Blocking stat calls; any thread.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "core/result.h"

namespace trainwatch {

// Whether someone other than the owner and root's group may write a file of `mode` and group
// `gid`: others (o+w), or a group other than root's (g+w). Group root's members are
// administrators, so its write bit (a umask of 002) is no user's.
bool OthersMayWrite(mode_t mode, gid_t gid);

// `path` made absolute with its links resolved, when it and each directory above it belong to
// root or `owner` and no one else may write them; else the error names the first that fails
// and why ("/home/alice/venv/bin: owned by uid 1000").
Result<std::string> CheckTrustedPath(const std::string& path, uid_t owner);

// PATH without the directories a user could plant a program in (CheckTrustedPath), and
// without relative ones; each dropped entry, with why, in `dropped`.
std::string TrustedSearchPath(const std::string& path, uid_t owner,
                              std::vector<std::string>& dropped);

// This process's PATH, as root: every tool (hl-smi, docker, gdb) is found on it and run as
// root, so a directory in it that another user may write would let them plant one. Sets PATH
// to TrustedSearchPath of it (the system's when none is left); each dropped entry, with why,
// in `dropped`. Nothing changes for another user.
void RestrictPathForRoot(std::vector<std::string>& dropped);

}  // namespace trainwatch
