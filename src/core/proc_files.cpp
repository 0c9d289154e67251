#include "core/proc_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "core/unique_fd.h"

namespace trainwatch {

namespace {

// Only the kernel's newline: a name set with prctl(PR_SET_NAME) may end with one of its own.
Result<std::string> CommOf(Result<ProcText> comm) {
  if (!comm.ok()) {
    return comm.error();
  }
  if (!comm->text.empty() && comm->text.back() == '\n') {
    comm->text.pop_back();
  }
  return std::move(comm->text);
}

}  // namespace

Result<ProcText> ReadProcFile(const std::string& path, std::size_t max_bytes) {
  return ReadProcFileAt(AT_FDCWD, path, max_bytes);
}

Result<ProcText> ReadProcFileAt(int dir_fd, const std::string& path, std::size_t max_bytes) {
  UniqueFd fd(::openat(dir_fd, path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) {
    return Error{path + ": " + std::strerror(errno)};
  }
  Result<ProcText> text = ReadToEnd(fd.get(), max_bytes);
  if (!text) {
    return Error{path + text.error().message};
  }
  return text;
}

Result<ProcText> ReadToEnd(int fd, std::size_t max_bytes) {
  ProcText out;
  char buffer[16384];
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return Error{std::string(": ") + std::strerror(errno)};
    }
    if (n == 0) {
      break;
    }
    std::size_t room = max_bytes - out.text.size();
    if (static_cast<std::size_t>(n) > room) {
      out.text.append(buffer, room);
      out.truncated = true;
      break;
    }
    out.text.append(buffer, static_cast<std::size_t>(n));
  }
  return out;
}

std::string ProcPath(const std::string& proc_root, pid_t pid, std::string_view name) {
  return proc_root + "/" + std::to_string(pid) + "/" + std::string(name);
}

std::string ForeignRootOf(pid_t pid, const std::string& proc_root) {
  struct stat ours {};
  struct stat theirs {};
  if (::stat((proc_root + "/self/root").c_str(), &ours) != 0 ||
      ::stat(ProcPath(proc_root, pid, "root").c_str(), &theirs) != 0 ||
      (ours.st_dev == theirs.st_dev && ours.st_ino == theirs.st_ino)) {
    return {};
  }
  return ProcPath(proc_root, pid, "root");
}

bool IsZombie(pid_t pid, const std::string& proc_root) {
  Result<ProcText> stat = ReadProcFile(ProcPath(proc_root, pid, "stat"), 4096);
  if (!stat) {
    return false;
  }
  // "PID (COMM) STATE ...": the comm may hold ") ", so the state follows the last ')'.
  const std::string& text = stat->text;
  const std::size_t close = text.rfind(')');
  if (close == std::string::npos || close + 2 >= text.size()) {
    return false;
  }
  const char state = text[close + 2];
  return state == 'Z' || state == 'X';
}

pid_t PidInItsNamespace(pid_t pid, const std::string& proc_root) {
  Result<ProcText> status = ReadProcFile(ProcPath(proc_root, pid, "status"), 64 << 10);
  if (!status) {
    return pid;
  }
  const std::string& text = status->text;
  const std::size_t at = text.find("\nNSpid:");
  if (at == std::string::npos) {
    return pid;
  }
  const std::size_t end = text.find('\n', at + 1);
  const std::string line = text.substr(at + 8, end == std::string::npos ? end : end - at - 8);
  const std::size_t last = line.find_last_of(" \t");
  const long inner =
      std::strtol(line.c_str() + (last == std::string::npos ? 0 : last + 1), nullptr, 10);
  return inner > 0 ? static_cast<pid_t>(inner) : pid;
}

Result<std::string> ReadProcComm(pid_t pid, const std::string& proc_root) {
  return CommOf(ReadProcFile(ProcPath(proc_root, pid, "comm")));
}

Result<std::string> ReadProcCommAt(int pid_dir_fd) {
  return CommOf(ReadProcFileAt(pid_dir_fd, "comm"));
}

Result<ProcText> ReadProcCmdline(pid_t pid, const std::string& proc_root, std::size_t max_bytes) {
  return ReadProcFile(ProcPath(proc_root, pid, "cmdline"), max_bytes);
}

Result<ProcText> ReadProcEnviron(pid_t pid, const std::string& proc_root, std::size_t max_bytes) {
  return ReadProcFile(ProcPath(proc_root, pid, "environ"), max_bytes);
}

}  // namespace trainwatch
