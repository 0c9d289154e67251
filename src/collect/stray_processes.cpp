#include "collect/stray_processes.h"

#include <dirent.h>
#include <spdlog/spdlog.h>

#include <cctype>
#include <csignal>
#include <memory>
#include <optional>

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

// The pids below `proc_root` whose environment `wanted` accepts.
std::vector<int> ProcessesWhose(
    const std::string& proc_root,
    const std::function<bool(int pid, std::string_view environ)>& wanted) {
  std::vector<int> pids;
  DirPtr dir(::opendir(proc_root.c_str()));
  if (dir == nullptr) {
    return pids;
  }
  while (const dirent* e = ::readdir(dir.get())) {
    const std::string_view name = e->d_name;
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name.front()))) {
      continue;
    }
    const int pid = std::atoi(e->d_name);
    if (Result<ProcText> environ = ReadProcEnviron(pid, proc_root);
        environ && wanted(pid, environ->text)) {
      pids.push_back(pid);
    }
  }
  return pids;
}

}  // namespace

std::vector<int> ProcessesMarked(const std::string& proc_root, std::string_view mark) {
  const std::size_t equals = mark.find('=');
  const std::string_view prefix = mark.substr(0, equals + 1);
  const std::string_view value = mark.substr(equals + 1);
  return ProcessesWhose(proc_root, [&](int /*pid*/, std::string_view environ) {
    return EntryValue(environ, prefix) == value;
  });
}

std::vector<RunProcess> ProcessesOfRuns(const std::string& proc_root) {
  std::string prefix(kRunMarkName);
  prefix.push_back('=');
  std::vector<RunProcess> found;
  ProcessesWhose(proc_root, [&](int pid, std::string_view environ) {
    const std::optional<std::string_view> value = EntryValue(environ, prefix);
    if (!value) {
      return false;
    }
    // "<pid of the trainwatch that ran it>.<run>"
    const int owner = std::atoi(std::string(value->substr(0, value->find('.'))).c_str());
    if (owner > 0) {
      found.push_back({pid, owner});
    }
    return false;
  });
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
