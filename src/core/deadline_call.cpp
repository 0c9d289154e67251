#include "core/deadline_call.h"

#include <algorithm>
#include <charconv>
#include <map>

#include "core/proc_files.h"

namespace trainwatch {
namespace {

// Process-wide on purpose: the threads left behind are the process's, whoever started them.
std::atomic<std::size_t> stuck_calls{0};

}  // namespace

std::size_t StuckDeadlineCalls() { return stuck_calls.load(); }

bool DeadlineBudget::MayStart(std::string& why) const {
  if (count_->stuck.load() >= count_->cap) {
    why = std::string(kNotTried) + std::to_string(count_->stuck.load()) +
          " earlier reads of the same kind are still stuck (a hung file system?)";
    return false;
  }
  if (stuck_calls.load() >= kMaxStuckCalls) {
    why = std::string(kNotTried) + std::to_string(stuck_calls.load()) +
          " earlier reads of the daemon's are still stuck (hung file systems?)";
    return false;
  }
  return true;
}

void DeadlineBudget::LeftBehind() const {
  ++count_->stuck;
  ++stuck_calls;
}

void DeadlineBudget::ReturnedLate() const {
  --count_->stuck;
  --stuck_calls;
}

DeadlineBudget UserDeadlineBudget(std::optional<uid_t> uid) {
  static std::mutex mutex;
  static std::map<uid_t, DeadlineBudget> by_uid;
  static const DeadlineBudget shared;
  if (!uid) {
    return shared;
  }
  const std::lock_guard lock(mutex);
  if (auto known = by_uid.find(*uid); known != by_uid.end()) {
    return known->second;
  }
  if (by_uid.size() >= kMaxUserBudgets) {
    // Forgetting a budget with nothing stuck loses nothing: its user starts afresh at zero.
    auto idle = std::find_if(by_uid.begin(), by_uid.end(),
                             [](const auto& entry) { return entry.second.stuck() == 0; });
    if (idle == by_uid.end()) {
      return shared;  // as many users with reads stuck as are kept: a flood of them
    }
    by_uid.erase(idle);
  }
  return by_uid.emplace(*uid, DeadlineBudget()).first->second;
}

std::optional<uid_t> ProcessRealUid(const std::string& proc_root, pid_t pid) {
  Result<ProcText> status = ReadProcFile(ProcPath(proc_root, pid, "status"), 64 << 10);
  if (!status) {
    return std::nullopt;
  }
  // "Uid:\t<real>\t<effective>\t<saved>\t<fs>"
  const std::string& text = status->text;
  std::size_t at = text.starts_with("Uid:") ? 0 : text.find("\nUid:");
  if (at == std::string::npos) {
    return std::nullopt;
  }
  at = text.find_first_not_of(" \t", at + (text[at] == '\n' ? 5 : 4));
  if (at == std::string::npos) {
    return std::nullopt;
  }
  uid_t uid = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data() + at, end, uid);
  if (error != std::errc() || (stop != end && *stop != '\t' && *stop != ' ' && *stop != '\n')) {
    return std::nullopt;
  }
  return uid;
}

}  // namespace trainwatch
