// Which CPython helper gdb may load for a rank (the py-bt command and its pretty printers). gdb
// runs as root with auto-loading off: a helper "<interpreter>-gdb.py" beside a user's copy of
// python, a venv made with --copies or a conda env would otherwise run as root. The one loaded
// is Debian's own, root-owned helper (python3.X-dbg's, under /usr/share/gdb/auto-load), and
// only for the exact interpreter it was made for: the rank's executable must have the GNU build
// id of /usr/bin/python3.X, whose helper it is. A copy of that interpreter anywhere (a venv)
// still gets its Python stacks; any other interpreter gets native stacks only. Blocking file
// reads; any thread.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "core/result.h"

namespace trainwatch::capture {

struct PythonHelperDirs {
  std::string auto_load = "/usr/share/gdb/auto-load";  // Debian's helpers: <here>/usr/bin/X-gdb.py
  std::string interpreters = "/usr/bin";               // the interpreters they belong to
};

// A rank in a container (another mount namespace): its interpreter is the image's own build,
// whose build id no host interpreter has. py-bt still works when the image carries that
// build's debug information (python3.X-dbg in the image, copied out by CopyOfDebugInfo) and
// this host has the helper of the same version: the helper is this host's, root's, never the
// image's (whose files the container's root can write).
struct ContainerInterpreter {
  std::string name;       // the interpreter's file name as the container has it: "python3.11"
  std::string debug_dir;  // its build's debug information, copied; empty: the image has none
};

// The helper for the rank whose executable is `exe` (/proc/PID/exe); nullopt with `why`
// when there is none it may load.
std::optional<std::string> TrustedPythonHelper(const std::string& exe, std::string& why,
                                               const PythonHelperDirs& dirs = {},
                                               const ContainerInterpreter* container = nullptr);

// The file name of process `pid`'s executable as its own file system names it ("python3.11"),
// for the package that gives gdb its py-bt and the helper of a container's interpreter;
// "python3" when it cannot be read.
std::string InterpreterNameOf(pid_t pid, const std::string& proc_root = "/proc");

// The executable's GNU build id in hex; empty when it has none; an error when it is not a
// regular file or cannot be read, or libdw (libdw1) is missing.
Result<std::string> BuildIdOf(const std::string& path);

}  // namespace trainwatch::capture
