// Where a process's main thread is, without stopping it: its scheduler state from
// /proc/PID/stat and the kernel function it sleeps in from /proc/PID/wchan. Sampled many
// times over a window, the shares tell a straggler from its peers: they wait in a collective
// (a futex, a socket), it runs or sleeps elsewhere (diagnose/wait_straggler.h).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

namespace trainwatch::collect {

struct WaitState {
  char state = '?';   // R running, S sleeping, D disk sleep, T stopped, Z zombie
  std::string wchan;  // the kernel function it sleeps in; empty or "0" when running
};

// A wchan file's text as the kernel function's name: up to the first newline or NUL, symbol
// characters only (anything else is not what the kernel writes there); "0" (running) is empty.
std::string ParseWchan(std::string_view text);

// nullopt when the process is gone (or a zombie) or its files cannot be read. Any thread.
std::optional<WaitState> ReadWaitState(pid_t pid, const std::string& proc_root = "/proc");

// What a sample counts as: "running" (R), the wchan for a sleep ("futex_do_wait"; "asleep"
// when the kernel does not name it), "disk sleep in <wchan>" (D), "stopped" (T, t).
std::string WaitKey(const WaitState& state);

}  // namespace trainwatch::collect
