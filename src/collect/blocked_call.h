// What a thread stuck in the kernel is blocked on, read from /proc without stopping it: its
// scheduler state and how often it has been switched out (/proc/PID/task/TID/stat, status), the
// system call it is in and the file that call is on (syscall, fd/N, and the mount that file is
// on from mountinfo), the kernel function it sleeps in (wchan) and, where the reader may, its
// kernel stack (/proc/PID/task/TID/stack: root with CAP_SYS_ADMIN; the hardened unit has it, a
// container without it gets none). A thread in uninterruptible sleep (D) whose switch count
// does not move is not doing I/O in bursts — each completed I/O wakes it — it is stuck: on a
// dead NFS or FUSE server, or in a wedged device's driver. Everything read is the job's own
// (its file names, its thread names): capped and made printable. Blocking; any thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainwatch::collect {

// One thread's scheduler state and how often it has been switched out.
struct ThreadProgress {
  pid_t tid = 0;
  char state = '?';            // R, S, D...
  std::uint64_t switches = 0;  // voluntary + nonvoluntary; read for threads in D only
};

// Threads of one process looked at, at most (a rank has tens; a process with more is
// looked at by its first ones, its main thread always among them).
inline constexpr std::size_t kMaxThreadsLooked = 512;

// The threads of `pid`, each with its state; empty when the process is gone or unreadable.
std::vector<ThreadProgress> ReadThreadProgress(pid_t pid, const std::string& proc_root = "/proc");

// What one blocked thread waits on. Every field may be empty: what could not be read.
struct BlockedCall {
  std::string syscall;      // "read", "ioctl", "syscall 425"; "no system call" (a page fault)
  std::string file;         // for a call on a descriptor: what it is open on
  std::string fs_type;      // the file system that file is on: "fuse.sshfs", "nfs4"
  std::string mount_point;  // where that file system is mounted, as the process sees it
  std::string wchan;        // the kernel function it sleeps in
  std::vector<std::string> stack;  // kernel frames, innermost first: "request_wait_answer [fuse]"
};

BlockedCall DescribeBlockedCall(pid_t pid, pid_t tid, const std::string& proc_root = "/proc");

// "read(fd 7: /mnt/ckpt/model.pt, on fuse.sshfs at /mnt/ckpt) in request_wait_answer; kernel
// stack: request_wait_answer [fuse] < fuse_simple_request [fuse] < ..." — what rules match
// (rules/blocked.yaml). Printable, one line.
std::string FormatBlockedCall(const BlockedCall& call);

// The parsers under them. Pure; any thread.

// /proc/PID/task/TID/syscall: "0 0x7 0x7f... ..." (the number, then the arguments), "-1 sp pc"
// (blocked, but not in a system call), "running". nullopt for "running" or what does not parse.
struct SyscallState {
  long number = -1;  // -1: not in a system call
  std::uint64_t first_argument = 0;
};
std::optional<SyscallState> ParseSyscallFile(std::string_view text);

// The name of the calls a stuck rank is found in ("read", "openat", "ioctl", "fsync"...); else
// "syscall N".
std::string SyscallName(long number);

// Whether a call's first argument is a file descriptor.
bool TakesDescriptorFirst(long number);

// /proc/PID/task/TID/stack lines ("[<0>] request_wait_answer+0x12a/0x260 [fuse]") as
// "request_wait_answer [fuse]", innermost first, at most `max_frames`.
std::vector<std::string> ParseKernelStack(std::string_view text, std::size_t max_frames);

// The mount `path` is on, from the process's mountinfo: the longest mount point that holds it
// (the last one mounted there wins, as it hides the ones under it).
struct MountOfPath {
  std::string mount_point;
  std::string fs_type;
  std::string source;
};
std::optional<MountOfPath> FindMountOf(std::string_view mountinfo, std::string_view path);

}  // namespace trainwatch::collect
