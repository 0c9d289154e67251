// How RankCapture runs gdb on a rank: the command line (py-bt with the CPython helper, bt
// where eu-stack is missing, gdb's symbol index in the cache), in its two forms — attach at
// once, or read the interpreter's symbols and the types py-bt needs while the rank runs and
// attach only when a go file appears — and the go folders a killed daemon left behind. gdb runs
// as root against a user's process: no init file, no auto-loaded script (a "-gdb.py" beside
// the user's interpreter, a .debug_gdb_scripts section, a libthread_db beside its libc), only
// Debian's root-owned CPython helper, named by the caller after checking it.
// Stateless; any thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>

#include "config/capture_config.h"

namespace trainwatch::capture {

struct GdbRequest {
  pid_t pid = 0;
  std::string proc_root;  // "/proc" but in tests
  bool python = false;    // thread apply all py-bt
  // The CPython helper gdb sources for py-bt (TrustedPythonHelper); nothing else is loaded:
  // auto-loading is off. REQUIRES: set when `python` is.
  std::string python_helper;
  bool native = false;  // thread apply all bt (eu-stack is not installed)
  // A rank in a container: the folder its executable's debug information was copied to
  // (CopyOfDebugInfo), searched before ours. Its libraries gdb reads inside the rank's mount
  // namespace by itself. Empty: none.
  std::string debug_dir;
  // Its executable, copied where gdb keeps the path (container_executable.h); empty: the
  // rank's /proc/PID/exe.
  std::string exe_copy;
  std::string index_dir;  // gdb's index cache; empty: none
  // Empty: attach at once. Else: read the symbols first, attach when this file exists, give
  // up (quit 3) after `go_wait`.
  std::string go_file;
  std::chrono::seconds go_wait{60};
  std::chrono::milliseconds timeout{45000};  // once attached
  std::string as;                            // the file in the bundle
};

config::CommandConfig GdbCommand(const GdbRequest& request);

// Removes the go folders ("go-<pid>-XXXXXX" in `dir`) of a trainwatch that is gone; those of
// one that lives (a `wrap` beside the daemon) stay.
void RemoveGoDirsOfTheDead(const std::string& dir);

// Whether `tool` is an executable on the daemon's PATH, where its children look for it.
bool OnPath(const std::string& tool);

}  // namespace trainwatch::capture
