#include "collect/wait_state.h"

#include "collect/process_tree.h"
#include "core/proc_files.h"

namespace trainwatch::collect {
namespace {

// A kernel symbol's name; longer is not one.
constexpr std::size_t kMaxWchanBytes = 128;

}  // namespace

std::string ParseWchan(std::string_view text) {
  std::string name;
  for (char c : text) {
    if (c == '\n' || c == '\0') {
      break;
    }
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
        c == '.') {
      name += c;
    }
  }
  return name == "0" ? std::string() : name;
}

std::optional<WaitState> ReadWaitState(pid_t pid, const std::string& proc_root) {
  Result<ProcText> stat = ReadProcFile(ProcPath(proc_root, pid, "stat"), 4096);
  if (!stat) {
    return std::nullopt;
  }
  const std::optional<ProcessStat> parsed = ParseProcessStat(stat->text);
  if (!parsed || parsed->state == 'Z' || parsed->state == 'X') {
    return std::nullopt;
  }
  WaitState state;
  state.state = parsed->state;
  if (Result<ProcText> wchan = ReadProcFile(ProcPath(proc_root, pid, "wchan"), kMaxWchanBytes);
      wchan) {
    state.wchan = ParseWchan(wchan->text);
  }
  return state;
}

std::string WaitKey(const WaitState& state) {
  const bool named = !state.wchan.empty() && state.wchan != "0";
  switch (state.state) {
    case 'S':
      return named ? state.wchan : "asleep";
    case 'D':
      return "disk sleep in " + (named ? state.wchan : std::string("the kernel"));
    case 'T':
    case 't':
      return "stopped";
    default:
      return "running";
  }
}

}  // namespace trainwatch::collect
