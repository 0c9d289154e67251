#include "collect/stray_processes.h"

#include <spdlog/spdlog.h>

#include <csignal>
#include <memory>
#include <optional>
#include <utility>

#include "core/directory.h"
#include "core/proc_files.h"

namespace trainwatch::collect {

namespace {

// The value of the entry starting with `prefix` ("NAME=") in a NUL-separated environment.
std::optional<std::string_view> EntryValue(std::string_view text, std::string_view prefix) {
  for (std::size_t at = text.find(prefix); at != std::string_view::npos;
       at = text.find(prefix, at + 1)) {
    if (at == 0 || text[at - 1] == '\0') {
      const std::size_t start = at + prefix.size();
      const std::size_t end = text.find('\0', start);
      return text.substr(start, end == std::string_view::npos ? text.size() - start : end - start);
    }
  }
  return std::nullopt;
}

// Every process below `proc_root` carrying a run's mark, with the mark's value. One walk of
// /proc (pids as core/directory.h parses them) for both the collector's own strays and a
// restart's sweep.
std::vector<std::pair<int, std::string>> MarkedProcesses(const std::string& proc_root) {
  std::vector<std::pair<int, std::string>> marked;
  std::string prefix(kRunMarkName);
  prefix.push_back('=');
  // An unreadable /proc marks nothing: there is nothing to sweep that could be found.
  (void)ForEachProcess(proc_root, [&](int, int pid, const char*) {
    if (Result<ProcText> environ = ReadProcEnviron(pid, proc_root); environ) {
      if (const std::optional<std::string_view> value = EntryValue(environ->text, prefix)) {
        marked.emplace_back(pid, std::string(*value));
      }
    }
  });
  return marked;
}

}  // namespace

std::vector<int> ProcessesMarked(const std::string& proc_root, std::string_view mark) {
  const std::string_view value = mark.substr(mark.find('=') + 1);
  std::vector<int> pids;
  for (const auto& [pid, its_value] : MarkedProcesses(proc_root)) {
    if (its_value == value) {
      pids.push_back(pid);
    }
  }
  return pids;
}

std::vector<RunProcess> ProcessesOfRuns(const std::string& proc_root) {
  std::vector<RunProcess> found;
  for (const auto& [pid, value] : MarkedProcesses(proc_root)) {
    // "<pid of the trainwatch that ran it>.<run>"
    const int owner = ParseDecimalName(std::string_view(value).substr(0, value.find('.')));
    if (owner > 0) {
      found.push_back({pid, owner});
    }
  }
  return found;
}

void KillCollectorsOfDeadRuns(Env& env) {
  auto found = std::make_shared<std::vector<RunProcess>>();
  env.RunOnPool([found, proc_root = env.proc_root()] { *found = ProcessesOfRuns(proc_root); },
                [found, &env] {
                  int killed = 0;
                  for (const RunProcess& process : *found) {
                    if (!env.ProcessExists(process.owner)) {
                      env.Signal(process.pid, SIGKILL);
                      ++killed;
                    }
                  }
                  if (killed > 0) {
                    spdlog::warn(
                        "killed {} collector processes left running by a trainwatch that is gone "
                        "(killed mid-capture)",
                        killed);
                  }
                });
}

}  // namespace trainwatch::collect
