#include "source/writers.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "core/directory.h"
#include "core/proc_files.h"
#include "core/unique_fd.h"
#include "core/untrusted_file.h"

namespace trainwatch::source {
namespace {

// The start of a descriptor's fdinfo, relative to `dir_fd`; empty when unreadable.
std::string ReadSmall(int dir_fd, const std::string& name) {
  const UniqueFd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    return {};
  }
  char buffer[512];
  const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
  return n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : std::string();
}

// Whether fdinfo text says the descriptor was opened for writing. `flags:` is octal.
bool OpenForWriting(const std::string& fdinfo) {
  const std::size_t at = fdinfo.find("flags:");
  if (at == std::string::npos) {
    return false;
  }
  char* end = nullptr;
  const unsigned long flags = std::strtoul(fdinfo.c_str() + at + 6, &end, 8);
  if (end == fdinfo.c_str() + at + 6) {
    return false;
  }
  const unsigned long mode = flags & O_ACCMODE;
  return mode == O_WRONLY || mode == O_RDWR;
}

// Descriptors that cannot be a tailed log; skipping them saves a stat each (a trainer holds
// hundreds of sockets, pipes and device handles).
bool CannotBeALog(std::string_view target) {
  for (std::string_view prefix : {"socket:", "pipe:", "anon_inode:", "/dev/"}) {
    if (target.starts_with(prefix)) {
      return true;
    }
  }
  return false;
}

// Adds the process's writing descriptors on `files` to `out`.
void ScanProcess(int proc_fd, const char* pid_name, pid_t pid, const std::set<FileId>& files,
                 std::map<FileId, std::vector<WriterProcess>>& out) {
  const UniqueFd pid_fd(::openat(proc_fd, pid_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (pid_fd.get() < 0) {
    return;  // it exited
  }
  const int fd_dir_fd = ::openat(pid_fd.get(), "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_dir_fd < 0) {
    return;  // another user's process
  }
  DirPtr fd_dir(::fdopendir(fd_dir_fd));
  if (!fd_dir) {
    ::close(fd_dir_fd);
    return;
  }
  std::optional<std::string> comm;
  while (const dirent* entry = ::readdir(fd_dir.get())) {
    if (ParseDecimalName(entry->d_name) < 0) {
      continue;
    }
    char target[64];  // only the start matters, and readlink truncates without failing
    const ssize_t length = ::readlinkat(fd_dir_fd, entry->d_name, target, sizeof target);
    if (length < 0 || CannotBeALog(std::string_view(target, static_cast<std::size_t>(length)))) {
      continue;
    }
    struct stat st;
    if (::fstatat(fd_dir_fd, entry->d_name, &st, 0) != 0) {
      continue;
    }
    const FileId id{st.st_dev, st.st_ino};
    if (!files.contains(id) ||
        !OpenForWriting(ReadSmall(pid_fd.get(), std::string("fdinfo/") + entry->d_name))) {
      continue;
    }
    std::vector<WriterProcess>& writers = out[id];
    if (!writers.empty() && writers.back().pid == pid) {
      continue;  // a second descriptor on the same file
    }
    if (!comm) {
      Result<std::string> read = ReadProcCommAt(pid_fd.get());
      comm = read.ok() ? std::move(*read) : std::string();
    }
    writers.push_back({pid, *comm, /*cmdline=*/"", /*environ=*/"", /*uid=*/{},
                       /*exit_cause=*/""});  // see RememberProcess
  }
}

}  // namespace

std::optional<FileId> FileIdOf(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return std::nullopt;
  }
  return FileId{st.st_dev, st.st_ino};
}

std::map<FileId, std::vector<WriterProcess>> FindWriters(const std::set<FileId>& files,
                                                         const std::string& proc_root) {
  std::map<FileId, std::vector<WriterProcess>> out;
  if (files.empty()) {
    return out;
  }
  const pid_t self = ::getpid();
  // An unreadable /proc finds no writer: the stall and silence rules still judge the logs.
  (void)ForEachProcess(proc_root, [&](int proc_fd, int pid, const char* name) {
    if (pid != self) {
      ScanProcess(proc_fd, name, pid, files, out);
    }
  });
  for (auto& [id, writers] : out) {
    std::sort(writers.begin(), writers.end(),
              [](const WriterProcess& a, const WriterProcess& b) { return a.pid < b.pid; });
  }
  return out;
}

namespace {

// The cap on each of a remembered writer's cmdline and environ: it keeps them in memory until
// an incident, for every writer seen.
constexpr std::size_t kRememberedBytes = 1 << 20;

std::string TextOrEmpty(Result<ProcText> read) {
  return read.ok() ? std::move(read->text) : std::string();
}

}  // namespace

void RememberProcess(WriterProcess& process, const std::string& proc_root) {
  process.cmdline = TextOrEmpty(ReadProcCmdline(process.pid, proc_root, kRememberedBytes));
  process.environ = TextOrEmpty(ReadProcEnviron(process.pid, proc_root, kRememberedBytes));
  process.uid = ProcessOwner(proc_root, process.pid);
}

void KeepWhatExitingWritersHadShown(std::vector<WriterProcess>& found,
                                    const std::vector<WriterProcess>& known) {
  for (WriterProcess& writer : found) {
    if (!writer.cmdline.empty() || !writer.environ.empty()) {
      continue;
    }
    for (const WriterProcess& before : known) {
      // The owner read now, when read, must be the one seen before: the uid says who may
      // speak for the job the environment names, and a reused pid is another user's process.
      if (before.pid == writer.pid && before.comm == writer.comm &&
          (!writer.uid || !before.uid || writer.uid == before.uid) &&
          (!before.cmdline.empty() || !before.environ.empty())) {
        writer.cmdline = before.cmdline;
        writer.environ = before.environ;
        if (!writer.uid) {
          writer.uid = before.uid;
        }
        break;
      }
    }
  }
}

}  // namespace trainwatch::source
