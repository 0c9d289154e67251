#include "collect/process_tree.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <set>

#include "core/proc_files.h"

namespace trainwatch::collect {
namespace {

bool ToNumber(std::string_view text, std::uint64_t& out) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc() && end == text.data() + text.size();
}

// The whitespace-separated fields of `text`.
std::vector<std::string_view> Fields(std::string_view text) {
  std::vector<std::string_view> fields;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t begin = text.find_first_not_of(" \n", at);
    if (begin == std::string_view::npos) {
      break;
    }
    std::size_t end = text.find_first_of(" \n", begin);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    fields.push_back(text.substr(begin, end - begin));
    at = end;
  }
  return fields;
}

}  // namespace

std::optional<ProcessStat> ParseProcessStat(std::string_view line) {
  const std::size_t open = line.find(" (");
  const std::size_t close = line.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return std::nullopt;
  }
  ProcessStat stat;
  std::uint64_t number = 0;
  if (!ToNumber(line.substr(0, open), number)) {
    return std::nullopt;
  }
  stat.pid = static_cast<pid_t>(number);
  stat.comm = std::string(line.substr(open + 2, close - open - 2));
  // After the comm: state(3) ppid(4) ... utime(14) stime(15) ... starttime(22), counted from 1.
  const std::vector<std::string_view> rest = Fields(line.substr(close + 1));
  constexpr std::size_t kFirst = 3;
  auto field = [&](std::size_t number_in_man_page) { return rest[number_in_man_page - kFirst]; };
  if (rest.size() < 22 - kFirst + 1 || field(3).size() != 1) {
    return std::nullopt;
  }
  stat.state = field(3).front();
  std::uint64_t ppid = 0;
  std::uint64_t utime = 0;
  std::uint64_t stime = 0;
  if (!ToNumber(field(4), ppid) || !ToNumber(field(14), utime) || !ToNumber(field(15), stime) ||
      !ToNumber(field(22), stat.start_ticks)) {
    return std::nullopt;
  }
  stat.ppid = static_cast<pid_t>(ppid);
  stat.cpu_ticks = utime + stime;
  return stat;
}

ProcessTree ProcessTree::Read(const std::string& proc_root) {
  std::vector<ProcessStat> processes;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(proc_root, error)) {
    const std::string name = entry.path().filename().string();
    std::uint64_t pid = 0;
    if (!ToNumber(name, pid)) {
      continue;
    }
    Result<ProcText> stat = ReadProcFile(entry.path().string() + "/stat", 4096);
    if (!stat) {
      continue;  // exited meanwhile
    }
    // A zombie has exited: only its parent has not reaped it yet (a launcher waiting on
    // another child first). Not a process to map, sample or attach to.
    if (std::optional<ProcessStat> parsed = ParseProcessStat(stat->text);
        parsed && parsed->state != 'Z') {
      processes.push_back(std::move(*parsed));
    }
  }
  return ProcessTree(std::move(processes));
}

ProcessTree::ProcessTree(std::vector<ProcessStat> processes) {
  std::sort(processes.begin(), processes.end(), [](const ProcessStat& a, const ProcessStat& b) {
    return a.start_ticks != b.start_ticks ? a.start_ticks < b.start_ticks : a.pid < b.pid;
  });
  for (ProcessStat& process : processes) {
    children_.emplace(process.ppid, process.pid);  // in start order: a multimap keeps it
    const pid_t pid = process.pid;
    processes_.emplace(pid, std::move(process));
  }
}

const ProcessStat* ProcessTree::Find(pid_t pid) const {
  const auto found = processes_.find(pid);
  return found == processes_.end() ? nullptr : &found->second;
}

std::vector<pid_t> ProcessTree::Children(pid_t pid) const {
  std::vector<pid_t> children;
  const auto [begin, end] = children_.equal_range(pid);
  for (auto it = begin; it != end; ++it) {
    children.push_back(it->second);
  }
  return children;
}

std::vector<pid_t> ProcessTree::WithDescendants(const std::vector<pid_t>& roots) const {
  std::vector<pid_t> walked;
  std::set<pid_t> seen;
  std::vector<pid_t> stack(roots.rbegin(), roots.rend());
  while (!stack.empty()) {
    const pid_t pid = stack.back();
    stack.pop_back();
    if (pid <= 0 || !seen.insert(pid).second || Find(pid) == nullptr) {
      continue;
    }
    walked.push_back(pid);
    const std::vector<pid_t> children = Children(pid);
    stack.insert(stack.end(), children.rbegin(), children.rend());
  }
  return walked;
}

bool ProcessTree::IsAncestor(pid_t ancestor, pid_t pid) const {
  std::set<pid_t> seen;  // a corrupt (or fake) tree must not loop
  for (const ProcessStat* at = Find(pid); at != nullptr && seen.insert(at->pid).second;
       at = Find(at->ppid)) {
    if (at->ppid == ancestor) {
      return true;
    }
  }
  return false;
}

std::optional<std::uint64_t> ReadCpuTicks(pid_t pid, const std::string& proc_root) {
  Result<ProcText> stat = ReadProcFile(ProcPath(proc_root, pid, "stat"), 4096);
  if (!stat) {
    return std::nullopt;
  }
  std::optional<ProcessStat> parsed = ParseProcessStat(stat->text);
  if (!parsed || parsed->state == 'Z') {
    return std::nullopt;  // a zombie has exited
  }
  return parsed->cpu_ticks;
}

}  // namespace trainwatch::collect
