// FakeProc: a /proc of our own in a temporary folder, each process a folder with stat, cmdline
// and environ as the kernel writes them (NUL-separated), for code that walks a process tree.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "support/temp_dir.h"

namespace trainwatch::testing {

class FakeProc {
 public:
  // `start`: its start time in clock ticks since boot (stat's field 22).
  void Add(int pid, int ppid, int start, const std::vector<std::string>& argv,
           const std::vector<std::string>& env, const std::string& comm = "python3",
           char state = 'S') {
    const std::string dir = std::to_string(pid);
    std::filesystem::create_directories(root_.PathOf(dir));
    root_.Write(dir + "/stat", std::to_string(pid) + " (" + comm + ") " + state + " " +
                                   std::to_string(ppid) +
                                   " 1 1 0 -1 4194560 100 0 0 0 70 30 0 0 20 0 3 0 " +
                                   std::to_string(start) + " 1000 100\n");
    std::string cmdline;
    for (const std::string& arg : argv) {
      cmdline += arg + '\0';
    }
    root_.Write(dir + "/cmdline", cmdline);
    std::string environ;
    for (const std::string& entry : env) {
      environ += entry + '\0';
    }
    root_.Write(dir + "/environ", environ);
  }
  // The process is gone: its folder too.
  void Remove(int pid) { std::filesystem::remove_all(root_.PathOf(std::to_string(pid))); }
  std::string root() const { return root_.path().string(); }

 private:
  TempDir root_;
};

}  // namespace trainwatch::testing
