#include "collect/python_hook.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>

#include "collect/rank_identity.h"
#include "collect/rooted_files.h"
#include "core/proc_files.h"
#include "core/unique_fd.h"
#include "core/untrusted_file.h"

namespace trainwatch::collect {
namespace {

// Whether /proc/PID/status's SigCgt mask has `signal` (bit signal-1) set.
bool Catches(pid_t pid, int signal, const std::string& proc_root) {
  Result<ProcText> status = ReadProcFile(ProcPath(proc_root, pid, "status"), 64 * 1024);
  if (!status) {
    return false;
  }
  const std::size_t at = status->text.find("SigCgt:");
  if (at == std::string::npos) {
    return false;
  }
  const unsigned long long mask = std::strtoull(status->text.c_str() + at + 7, nullptr, 16);
  return signal >= 1 && signal <= 64 && ((mask >> (signal - 1)) & 1ULL) != 0;
}

// The stacks file, opened inside the rank's root as the rank's own regular file.
Result<UniqueFd> OpenHookFile(const PythonHook& hook) {
  return RootedFiles(hook.root).OpenOwned(hook.file, S_IFREG, hook.owner, O_RDONLY);
}

}  // namespace

int StacksSignal() { return SIGRTMIN + 3; }

std::vector<std::string> PythonHookEnvironment(const std::string& hook_dir,
                                               const std::string& stacks_dir,
                                               const std::string& pythonpath) {
  std::string path = "PYTHONPATH=" + hook_dir;
  if (!pythonpath.empty()) {
    path += ":" + pythonpath;
  }
  return {path, std::string(kStacksDirVariable) + "=" + stacks_dir,
          std::string(kStacksSignalVariable) + "=" + std::to_string(StacksSignal())};
}

std::optional<PythonHook> FindPythonHook(pid_t pid, std::string_view environ,
                                         const std::string& proc_root, std::string& why) {
  const std::string dir = EnvironVariable(environ, kStacksDirVariable);
  if (dir.empty()) {
    why = "not started with trainwatch's Python hook (no TRAINWATCH_STACKS_DIR)";
    return std::nullopt;
  }
  PythonHook hook;
  hook.signal = std::atoi(EnvironVariable(environ, kStacksSignalVariable).c_str());
  // Through the process's own root: a sidecar sees the job's files there.
  hook.root = ProcPath(proc_root, pid, "root");
  // Named by the pid the rank knows itself by: in a container, its own namespace's.
  hook.file = dir + "/" + std::to_string(PidInItsNamespace(pid, proc_root)) + ".stacks";
  const std::optional<uid_t> owner = ProcessOwner(proc_root, pid);
  if (!owner) {
    why = "the rank is gone";
    return std::nullopt;
  }
  hook.owner = *owner;
  Result<UniqueFd> file = OpenHookFile(hook);
  struct stat info {};
  if (!file || ::fstat(file->get(), &info) != 0) {
    why = "the Python hook did not load (" +
          (file ? hook.file + ": " + std::strerror(errno) : file.error().message) + ")";
    return std::nullopt;
  }
  if (hook.signal <= 0 || !Catches(pid, hook.signal, proc_root)) {
    why = "the Python hook's signal is not caught (TRAINWATCH_STACKS_SIGNAL replaced?)";
    return std::nullopt;
  }
  hook.size = static_cast<std::uint64_t>(info.st_size);
  return hook;
}

std::string ReadHookDump(const PythonHook& hook, std::size_t max_bytes) {
  Result<UniqueFd> fd = OpenHookFile(hook);
  if (!fd) {
    return {};
  }
  std::string dump(max_bytes, '\0');
  const ssize_t got = ::pread(fd->get(), dump.data(), dump.size(), static_cast<off_t>(hook.size));
  dump.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
  return dump;
}

}  // namespace trainwatch::collect
