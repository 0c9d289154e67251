#include "capture/gdb_command.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string_view>

#include "capture/gdb_preload.h"
#include "core/proc_files.h"
#include "core/split.h"

namespace trainwatch::capture {
namespace {

// Where an early gdb finds the path of its go file, the code that reads the libraries before
// the attach (gdb_preload.h), and the /proc it reads them from.
constexpr std::string_view kGoFileVariable = "TRAINWATCH_GDB_GO";
constexpr std::string_view kPreloadVariable = "TRAINWATCH_GDB_PRELOAD";
constexpr std::string_view kProcVariable = "TRAINWATCH_GDB_PROC";

// gdb's Python: look up the CPython types py-bt reads (a name the interpreter lacks is
// skipped), so that their debug information is read before the rank is stopped, not after.
constexpr const char* kPrefetchPythonTypes =
    "python exec(\"for n in ('PyObject', 'PyTypeObject', 'PyVarObject', '_PyInterpreterFrame', "
    "'PyFrameObject', 'PyCodeObject', 'PyUnicodeObject', 'PyASCIIObject', 'PyBytesObject', "
    "'PyLongObject', 'PyDictObject', 'PyTupleObject', 'PyThreadState', '_PyCFrame'):\\n"
    " try: gdb.lookup_type(n)\\n except gdb.error: pass\")";

}  // namespace

config::CommandConfig GdbCommand(const GdbRequest& request) {
  const std::string pid = std::to_string(request.pid);
  config::CommandConfig command;
  command.name = "gdb";
  // -nx: no init file (~/.gdbinit, /etc/gdb). Nothing the traced program's owner can write is
  // loaded: no auto-loaded script of any object file, libthread_db only from the system's own
  // directories ($sdir: never "$pdir", beside the inferior's libc). debuginfod would go to the
  // network.
  command.argv = {"gdb",
                  "-batch",
                  "-nx",
                  "-iex",
                  "set auto-load off",
                  "-iex",
                  "set auto-load safe-path /nonexistent",
                  "-iex",
                  "set libthread-db-search-path $sdir",
                  "-iex",
                  "set debuginfod enabled off"};
  if (!request.debug_dir.empty()) {
    // The image's own build's debug information first. No sysroot is set: gdb's default
    // ("target:") reads the rank's libraries inside its mount namespace, where the image's
    // links resolve inside the image, never onto this host.
    command.argv.insert(command.argv.end(), {"-iex", "set debug-file-directory " +
                                                         request.debug_dir + ":/usr/lib/debug"});
  }
  if (request.python && !request.python_helper.empty()) {
    command.argv.insert(command.argv.end(), {"-iex", "source " + request.python_helper});
  }
  if (!request.index_dir.empty()) {
    command.argv.insert(command.argv.end(),
                        {"-iex", "set index-cache directory " + request.index_dir, "-iex",
                         "set index-cache enabled on"});
  }
  command.timeout = request.timeout;
  if (!request.exe_copy.empty()) {
    // gdb would take the executable /proc/PID/exe resolves to (ours) in place of the copy.
    command.argv.insert(command.argv.end(), {"-iex", "set exec-file-mismatch off"});
  }
  if (request.go_file.empty()) {
    if (!request.exe_copy.empty()) {
      command.argv.push_back(request.exe_copy);
    }
    command.argv.insert(command.argv.end(), {"-p", pid});
  } else {
    // The interpreter's symbols (and the types py-bt reads) are read from its executable while
    // the rank runs; gdb attaches when the go file appears, and gives up if it never does.
    command.argv.push_back(request.exe_copy.empty()
                               ? ProcPath(request.proc_root, request.pid, "exe")
                               : request.exe_copy);
    if (request.python) {
      command.argv.insert(command.argv.end(), {"-ex", kPrefetchPythonTypes});
    }
    // The libraries' symbols too, while the rank runs (a rank in another mount namespace
    // excepted, gdb_preload.h). Should this fail, gdb reads them after the attach as it would.
    command.env.push_back(std::string(kPreloadVariable) + "=" + std::string(GdbPreloadPython()));
    command.env.push_back(std::string(kProcVariable) + "=" +
                          (request.proc_root.empty() ? std::string("/proc") : request.proc_root));
    command.argv.insert(
        command.argv.end(),
        {"-ex", "python import os; exec(os.environ['" + std::string(kPreloadVariable) +
                    "']); trainwatch_added = trainwatch_preload(" + pid + ", os.environ['" +
                    std::string(kProcVariable) + "'], " + (request.python ? "True" : "False") +
                    ")"});
    // One Python command waits and attaches: should gdb's Python fail (a gdb without it, a
    // broken environment), nothing attaches, gdb ends and the rank is taken after the window.
    command.env.push_back(std::string(kGoFileVariable) + "=" + request.go_file);
    command.argv.insert(
        command.argv.end(),
        {"-ex",
         "python import os, time; go = os.environ['" + std::string(kGoFileVariable) +
             "']; deadline = time.monotonic() + " + std::to_string(request.go_wait.count()) +
             "; [time.sleep(0.005) for _ in iter(lambda: os.path.exists(go) or "
             "time.monotonic() > deadline, True)]; trainwatch_attach_at = time.monotonic(); "
             "gdb.execute('attach " +
             pid + "' if os.path.exists(go) else 'quit 3')",
         "-ex", "python trainwatch_attached(trainwatch_added)"});
    command.timeout += request.go_wait;
  }
  if (request.python) {
    command.argv.insert(command.argv.end(), {"-ex", "thread apply all py-bt"});
  }
  if (request.native) {
    command.argv.insert(command.argv.end(), {"-ex", "thread apply all bt"});
  }
  if (!request.go_file.empty()) {
    command.argv.insert(command.argv.end(), {"-ex", "detach", "-ex", "python trainwatch_held()"});
  }
  command.as = request.as;
  return command;
}

bool OnPath(const std::string& tool) {
  const char* path = std::getenv("PATH");
  bool found = false;
  ForEachPiece(
      path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin", ':', [&](std::string_view dir) {
        found =
            found || (!dir.empty() && ::access((std::string(dir) + "/" + tool).c_str(), X_OK) == 0);
      });
  return found;
}

void RemoveGoDirsOfTheDead(const std::string& dir) {
  std::error_code error;
  for (auto it = std::filesystem::directory_iterator(dir, error);
       !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
    const std::string name = it->path().filename().string();
    constexpr std::string_view kPrefix = "go-";
    if (!name.starts_with(kPrefix)) {
      continue;
    }
    const pid_t pid = std::atoi(name.c_str() + kPrefix.size());
    if (pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH) {
      std::error_code ignored;
      std::filesystem::remove_all(it->path(), ignored);
    }
  }
}

}  // namespace trainwatch::capture
