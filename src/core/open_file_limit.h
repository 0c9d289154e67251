// The daemon holds a descriptor per followed file (and per watch, client and child pipe):
// the usual soft limit of 1024 is far below what a node with thousands of rank logs needs,
// while the hard limit (systemd's default 524288) is not. Process-wide; call once at start.
#pragma once

#include <string>

namespace trainwatch {

struct OpenFileLimit {
  unsigned long long soft = 0;  // after the raise
  unsigned long long hard = 0;
  std::string error;  // why the soft limit could not be raised; empty when it was (or was at hard)
};

// Raises RLIMIT_NOFILE's soft limit to its hard limit (select(2) is not used anywhere, so
// descriptors above FD_SETSIZE are harmless).
OpenFileLimit RaiseOpenFileLimit();

}  // namespace trainwatch
