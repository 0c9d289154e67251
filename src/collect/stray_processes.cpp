#include "collect/stray_processes.h"

#include <dirent.h>

#include <cctype>

#include "core/directory.h"
#include "core/proc_files.h"

namespace trainwatch::collect {

std::vector<int> ProcessesMarked(const std::string& proc_root, std::string_view mark) {
  std::vector<int> pids;
  DirPtr dir(::opendir(proc_root.c_str()));
  if (dir == nullptr) {
    return pids;
  }
  std::string entry(mark);
  entry.push_back('\0');
  while (const dirent* e = ::readdir(dir.get())) {
    const std::string_view name = e->d_name;
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name.front()))) {
      continue;
    }
    const int pid = std::atoi(e->d_name);
    Result<ProcText> environ = ReadProcEnviron(pid, proc_root);
    if (!environ) {
      continue;
    }
    const std::string& text = environ->text;
    for (std::size_t at = text.find(entry); at != std::string::npos;
         at = text.find(entry, at + 1)) {
      if (at == 0 || text[at - 1] == '\0') {
        pids.push_back(pid);
        break;
      }
    }
  }
  return pids;
}

}  // namespace trainwatch::collect
