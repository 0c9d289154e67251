// Finds the processes that have given files open for writing, by scanning /proc/*/fd: the job
// behind a log, for an incident to name. Files are compared by device and inode, not by path,
// because a writer keeps its descriptor across a rename or an unlink. Stateless; any thread.
// The cost grows with the descriptors open on the machine, so call it when an answer is
// needed (a new file, an incident), not per line.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "source/file_id.h"

namespace trainwatch::source {

struct WriterProcess {
  pid_t pid = 0;
  std::string comm;  // /proc/PID/comm, without the newline; empty when unreadable
  // Read when the writer was first seen (RememberProcess): a job that crashes is gone by the
  // time its bundle is captured, and these are what its bundle needs most. Raw (unredacted):
  // the capture redacts them before they are written anywhere.
  std::string cmdline;  // NUL-separated, as /proc has it
  std::string environ;  // NUL-separated
  // Its owner, read with them: who may speak for the job its environment names (a user can
  // set any job id; only root sets the uid).
  std::optional<uid_t> uid;
  // How it ended, once it has and when that is known: "killed by signal 9 (SIGKILL)", "killed
  // by the kernel's OOM killer (signal 9)", "exit code 1". Empty while it runs or when unknown.
  std::string exit_cause;
  bool operator==(const WriterProcess&) const = default;
};

// Fills `process.cmdline` and `process.environ` from `proc_root` (each capped at 1 MiB);
// leaves them empty when unreadable.
void RememberProcess(WriterProcess& process, const std::string& proc_root = "/proc");

// A process on its way out has no memory left to read (the kernel drops it before it closes
// its files), so a scan in that moment finds it still writing, but with an empty cmdline and
// environment. Each such writer in `found` that `known` remembers (same pid and comm) keeps
// what was read of it before: the job's identity, which its last scan would otherwise erase.
void KeepWhatExitingWritersHadShown(std::vector<WriterProcess>& found,
                                    const std::vector<WriterProcess>& known);

// The id of the file at `path` (symlinks followed); nullopt when it cannot be stat'ed.
std::optional<FileId> FileIdOf(const std::string& path);

// For each id in `files` that some process has open with O_WRONLY or O_RDWR, those processes,
// sorted by pid, each once. Ids nobody writes are absent. The calling process is left out.
// Processes that cannot be read (another user's, one that exits mid-scan) are skipped
// silently. `proc_root` is for tests: a directory laid out like /proc.
std::map<FileId, std::vector<WriterProcess>> FindWriters(const std::set<FileId>& files,
                                                         const std::string& proc_root = "/proc");

}  // namespace trainwatch::source
