#include "collect/blocked_call.h"

#include <dirent.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>

#include "collect/process_tree.h"
#include "collect/wait_state.h"
#include "core/printable.h"
#include "core/proc_files.h"

namespace trainwatch::collect {
namespace {

constexpr std::size_t kMaxStatBytes = 4096;
constexpr std::size_t kMaxStatusBytes = 16 * 1024;
constexpr std::size_t kMaxStackBytes = 16 * 1024;
constexpr std::size_t kMaxMountinfoBytes = 1 << 20;
constexpr std::size_t kMaxStackFrames = 8;
// A file name or a mount point as shown: the job names them, and a line stays a line.
constexpr std::size_t kMaxShownPath = 512;

struct NamedCall {
  long number;
  const char* name;
  bool descriptor_first;
};

// The calls a rank blocked in the kernel is found in, by this machine's numbers (the
// <sys/syscall.h> constants: x86-64 and arm64 number them differently, and arm64 lacks the
// old ones, hence the #ifdefs).
constexpr auto kCalls = std::to_array<NamedCall>({
    {SYS_read, "read", true},
    {SYS_pread64, "pread64", true},
    {SYS_readv, "readv", true},
    {SYS_preadv, "preadv", true},
    {SYS_write, "write", true},
    {SYS_pwrite64, "pwrite64", true},
    {SYS_writev, "writev", true},
    {SYS_pwritev, "pwritev", true},
    {SYS_fsync, "fsync", true},
    {SYS_fdatasync, "fdatasync", true},
    {SYS_sync_file_range, "sync_file_range", true},
    {SYS_syncfs, "syncfs", true},
    {SYS_ioctl, "ioctl", true},
    {SYS_close, "close", true},
    {SYS_fstat, "fstat", true},
    {SYS_getdents64, "getdents64", true},
    {SYS_lseek, "lseek", true},
    {SYS_fallocate, "fallocate", true},
    {SYS_ftruncate, "ftruncate", true},
    {SYS_flock, "flock", true},
    {SYS_fcntl, "fcntl", true},
    {SYS_copy_file_range, "copy_file_range", true},
    {SYS_splice, "splice", true},
    {SYS_openat, "openat", false},
    {SYS_newfstatat, "newfstatat", false},
    {SYS_statx, "statx", false},
    {SYS_unlinkat, "unlinkat", false},
    {SYS_renameat2, "renameat2", false},
    {SYS_mkdirat, "mkdirat", false},
    {SYS_mmap, "mmap", false},
    {SYS_munmap, "munmap", false},
    {SYS_futex, "futex", false},
    {SYS_sync, "sync", false},
    {SYS_exit_group, "exit_group", false},
    {SYS_wait4, "wait4", false},
    {SYS_io_getevents, "io_getevents", false},
    {SYS_io_uring_enter, "io_uring_enter", true},
#ifdef SYS_open
    {SYS_open, "open", false},
#endif
#ifdef SYS_stat
    {SYS_stat, "stat", false},
#endif
#ifdef SYS_lstat
    {SYS_lstat, "lstat", false},
#endif
});

const NamedCall* FindCall(long number) {
  for (const NamedCall& call : kCalls) {
    if (call.number == number) {
      return &call;
    }
  }
  return nullptr;
}

std::string Shown(std::string_view text) { return Printable(text.substr(0, kMaxShownPath)); }

std::string TaskPath(const std::string& proc_root, pid_t pid, pid_t tid, std::string_view name) {
  return ProcPath(proc_root, pid, "task/" + std::to_string(tid) + "/" + std::string(name));
}

// The number after `key` ("voluntary_ctxt_switches:\t42") in a status file; 0 when absent.
std::uint64_t StatusNumber(std::string_view status, std::string_view key) {
  const std::size_t at = status.find(key);
  if (at == std::string_view::npos) {
    return 0;
  }
  std::size_t from = at + key.size();
  while (from < status.size() && (status[from] == ' ' || status[from] == '\t')) {
    ++from;
  }
  std::uint64_t value = 0;
  std::from_chars(status.data() + from, status.data() + status.size(), value);
  return value;
}

// The 0-based whitespace-separated fields of a mountinfo line.
std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t at = 0;
  while (at < line.size()) {
    while (at < line.size() && line[at] == ' ') {
      ++at;
    }
    const std::size_t end = std::min(line.find(' ', at), line.size());
    if (end > at) {
      fields.push_back(line.substr(at, end - at));
    }
    at = end;
  }
  return fields;
}

// mountinfo writes a space, tab, newline or backslash in a path as \040, \011, \012, \134.
std::string Unescaped(std::string_view field) {
  std::string out;
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && field.size() - i >= 4) {
      int value = 0;
      const auto [end, error] =
          std::from_chars(field.data() + i + 1, field.data() + i + 4, value, 8);
      if (error == std::errc() && end == field.data() + i + 4) {
        out += static_cast<char>(value);
        i += 3;
        continue;
      }
    }
    out += field[i];
  }
  return out;
}

// Whether `path` is `mount_point` or below it.
bool Holds(std::string_view mount_point, std::string_view path) {
  if (mount_point == "/") {
    return path.starts_with('/');
  }
  return path.starts_with(mount_point) &&
         (path.size() == mount_point.size() || path[mount_point.size()] == '/');
}

}  // namespace

std::vector<ThreadProgress> ReadThreadProgress(pid_t pid, const std::string& proc_root) {
  std::vector<ThreadProgress> threads;
  std::vector<pid_t> tids;
  const std::string task_dir = ProcPath(proc_root, pid, "task");
  if (DIR* dir = ::opendir(task_dir.c_str()); dir != nullptr) {
    while (const dirent* entry = ::readdir(dir)) {
      char* end = nullptr;
      const long tid = std::strtol(entry->d_name, &end, 10);
      if (end != entry->d_name && *end == '\0' && tid > 0) {
        tids.push_back(static_cast<pid_t>(tid));
      }
    }
    ::closedir(dir);
  }
  std::sort(tids.begin(), tids.end());
  // The main thread first: it is the one a stuck checkpoint read holds.
  if (auto main = std::find(tids.begin(), tids.end(), pid); main != tids.end()) {
    std::rotate(tids.begin(), main, main + 1);
  }
  if (tids.size() > kMaxThreadsLooked) {
    tids.resize(kMaxThreadsLooked);
  }
  for (pid_t tid : tids) {
    const Result<ProcText> stat =
        ReadProcFile(TaskPath(proc_root, pid, tid, "stat"), kMaxStatBytes);
    if (!stat) {
      continue;  // the thread ended
    }
    const std::optional<ProcessStat> parsed = ParseProcessStat(stat->text);
    if (!parsed) {
      continue;
    }
    ThreadProgress thread{tid, parsed->state, 0};
    if (thread.state == 'D') {
      const Result<ProcText> status =
          ReadProcFile(TaskPath(proc_root, pid, tid, "status"), kMaxStatusBytes);
      if (!status) {
        continue;
      }
      thread.switches = StatusNumber(status->text, "voluntary_ctxt_switches:") +
                        StatusNumber(status->text, "nonvoluntary_ctxt_switches:");
    }
    threads.push_back(thread);
  }
  return threads;
}

BlockedCall DescribeBlockedCall(pid_t pid, pid_t tid, const std::string& proc_root) {
  BlockedCall call;
  if (Result<ProcText> wchan = ReadProcFile(TaskPath(proc_root, pid, tid, "wchan"), 128); wchan) {
    call.wchan = ParseWchan(wchan->text);
  }
  if (Result<ProcText> stack = ReadProcFile(TaskPath(proc_root, pid, tid, "stack"), kMaxStackBytes);
      stack) {
    call.stack = ParseKernelStack(stack->text, kMaxStackFrames);
  }
  const Result<ProcText> syscall = ReadProcFile(TaskPath(proc_root, pid, tid, "syscall"), 512);
  const std::optional<SyscallState> state =
      syscall ? ParseSyscallFile(syscall->text) : std::nullopt;
  if (!state) {
    return call;
  }
  if (state->number < 0) {
    call.syscall = "no system call";
    return call;
  }
  call.syscall = SyscallName(state->number);
  // An fd in range; a larger "first argument" is not a descriptor (or a hostile value).
  if (!TakesDescriptorFirst(state->number) || state->first_argument > 1U << 20) {
    return call;
  }
  const std::string link = ProcPath(proc_root, pid, "fd/" + std::to_string(state->first_argument));
  std::array<char, 4096> target{};
  const ssize_t length = ::readlink(link.c_str(), target.data(), target.size() - 1);
  if (length <= 0) {
    return call;
  }
  const std::string path(target.data(), static_cast<std::size_t>(length));
  call.file = "fd " + std::to_string(state->first_argument) + ": " + Shown(path);
  if (!path.starts_with('/')) {
    return call;  // a pipe, a socket, an anon inode: on no mount
  }
  if (Result<ProcText> mountinfo =
          ReadProcFile(ProcPath(proc_root, pid, "mountinfo"), kMaxMountinfoBytes);
      mountinfo) {
    if (const std::optional<MountOfPath> mount = FindMountOf(mountinfo->text, path); mount) {
      call.fs_type = Shown(mount->fs_type);
      call.mount_point = Shown(mount->mount_point);
    }
  }
  return call;
}

std::string FormatBlockedCall(const BlockedCall& call) {
  std::string text = call.syscall.empty() ? "an unknown call" : call.syscall;
  if (!call.file.empty()) {
    text += "(" + call.file;
    if (!call.fs_type.empty()) {
      text += ", on " + call.fs_type + " at " + call.mount_point;
    }
    text += ")";
  }
  if (!call.wchan.empty()) {
    text += " in " + call.wchan;
  }
  if (!call.stack.empty()) {
    text += "; kernel stack: ";
    for (std::size_t i = 0; i < call.stack.size(); ++i) {
      text += (i == 0 ? "" : " < ") + call.stack[i];
    }
  }
  return text;
}

std::optional<SyscallState> ParseSyscallFile(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) {
    text.remove_suffix(1);
  }
  const std::vector<std::string_view> fields = Fields(text);
  if (fields.empty() || fields[0] == "running") {
    return std::nullopt;
  }
  SyscallState state;
  const auto [end, error] =
      std::from_chars(fields[0].data(), fields[0].data() + fields[0].size(), state.number);
  if (error != std::errc() || end != fields[0].data() + fields[0].size() || state.number < -1) {
    return std::nullopt;
  }
  if (state.number >= 0 && fields.size() >= 2) {
    std::string_view argument = fields[1];
    if (argument.starts_with("0x")) {
      argument.remove_prefix(2);
    }
    const auto [arg_end, arg_error] = std::from_chars(
        argument.data(), argument.data() + argument.size(), state.first_argument, 16);
    if (arg_error != std::errc() || arg_end != argument.data() + argument.size()) {
      return std::nullopt;
    }
  }
  return state;
}

std::string SyscallName(long number) {
  if (const NamedCall* call = FindCall(number); call != nullptr) {
    return call->name;
  }
  return "syscall " + std::to_string(number);
}

bool TakesDescriptorFirst(long number) {
  const NamedCall* call = FindCall(number);
  return call != nullptr && call->descriptor_first;
}

std::vector<std::string> ParseKernelStack(std::string_view text, std::size_t max_frames) {
  std::vector<std::string> frames;
  while (!text.empty() && frames.size() < max_frames) {
    const std::size_t end = std::min(text.find('\n'), text.size());
    std::string_view line = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    // "[<0>] " (or "[<ffffffffc0a1b2c3>] "): the address, hidden from most readers.
    if (line.starts_with("[<")) {
      const std::size_t close = line.find(">] ");
      if (close == std::string_view::npos) {
        continue;
      }
      line.remove_prefix(close + 3);
    }
    const std::size_t offset = line.find('+');
    std::string frame = Printable(line.substr(0, std::min(offset, std::size_t{128})));
    if (frame.empty()) {
      continue;
    }
    // " [fuse]": the module the function is in, when not the kernel proper.
    if (const std::size_t module = line.find(" [");
        module != std::string_view::npos && line.ends_with(']')) {
      frame += ' ';
      frame +=
          Printable(line.substr(module + 1, std::min(line.size() - module - 1, std::size_t{64})));
    }
    frames.push_back(std::move(frame));
  }
  return frames;
}

std::optional<MountOfPath> FindMountOf(std::string_view mountinfo, std::string_view path) {
  std::optional<MountOfPath> best;
  while (!mountinfo.empty()) {
    const std::size_t end = std::min(mountinfo.find('\n'), mountinfo.size());
    const std::string_view line = mountinfo.substr(0, end);
    mountinfo.remove_prefix(std::min(end + 1, mountinfo.size()));
    // "36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw": the mount point
    // is the fifth field; the file system type and source follow the " - ".
    const std::vector<std::string_view> fields = Fields(line);
    const auto dash = std::find(fields.begin(), fields.end(), "-");
    if (fields.size() < 5 || dash == fields.end() || dash - fields.begin() < 6 ||
        fields.end() - dash < 3) {
      continue;
    }
    std::string mount_point = Unescaped(fields[4]);
    if (!Holds(mount_point, path) || (best && best->mount_point.size() > mount_point.size())) {
      continue;
    }
    best = MountOfPath{std::move(mount_point), std::string(*(dash + 1)), Unescaped(*(dash + 2))};
  }
  return best;
}

}  // namespace trainwatch::collect
