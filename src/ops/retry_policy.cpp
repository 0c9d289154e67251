#include "ops/retry_policy.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/quantity.h"
#include "detect/attempt_text.h"
#include "ops/recurrence_book.h"
#include "ops/verdict_exit_code.h"

namespace trainwatch::ops {
namespace {

// "attempts 2, 3 and 4"
std::string AttemptList(const std::vector<std::uint32_t>& numbers) {
  std::string text = numbers.size() == 1 ? "attempt " : "attempts ";
  for (std::size_t i = 0; i < numbers.size(); ++i) {
    if (i > 0) {
      text += i + 1 == numbers.size() ? " and " : ", ";
    }
    text += std::to_string(numbers[i]);
  }
  return text;
}

// The attempts that failed, newest first: what the streaks are counted over.
std::vector<const AttemptEntry*> FailedNewestFirst(const std::vector<AttemptEntry>& earlier) {
  std::vector<const AttemptEntry*> failed;
  for (auto it = earlier.rbegin(); it != earlier.rend(); ++it) {
    if (EndsAttempt(it->kind) || it->kind == "peer") {
      failed.push_back(&*it);
    }
  }
  return failed;
}

}  // namespace

bool GotFurther(const std::optional<detect::JobStep>& earlier,
                const std::optional<detect::JobStep>& later) {
  if (!later) {
    return false;
  }
  if (!earlier) {
    return true;
  }
  return earlier->label != later->label || later->count > earlier->count;
}

RetryDecision DecideRetry(const std::vector<AttemptEntry>& earlier, const AttemptEntry& current,
                          const RetryPolicyConfig& config) {
  RetryDecision decision;
  decision.action = current.action;
  if (!EndsAttempt(current.kind)) {
    return decision;
  }
  const std::vector<const AttemptEntry*> failed = FailedNewestFirst(earlier);
  for (const AttemptEntry* entry : failed) {
    if (entry->fingerprint == current.fingerprint && EndsAttempt(entry->kind)) {
      decision.same_as.insert(decision.same_as.begin(), entry->place.number);
    }
  }
  const std::uint32_t number = current.place.number;

  // The node's devices: a failure that comes back is the node's, whatever the job does.
  if (IsDeviceCause(current.cause)) {
    auto before = std::find_if(failed.begin(), failed.end(), [](const AttemptEntry* entry) {
      return EndsAttempt(entry->kind) && IsDeviceCause(entry->cause);
    });
    if (before != failed.end()) {
      const AttemptEntry& last = **before;
      decision.action = rules::Action::kExcludeNode;
      if (!last.place.boot_id.empty() && !current.place.boot_id.empty() &&
          last.place.boot_id != current.place.boot_id) {
        decision.remedy_failed = true;
        decision.why = fmt::format(
            "the remedy did not work: a {} failure came back after the node was rebooted "
            "(attempt {} had one before the reboot): exclude the node",
            rules::CauseName(current.cause), last.place.number);
      } else {
        decision.why = fmt::format(
            "a {} failure on this node again (attempt {} had one, on the same boot): exclude "
            "the node",
            rules::CauseName(current.cause), last.place.number);
      }
      return decision;
    }
  }

  // The node that fails first, attempt after attempt, whatever the job does.
  if (current.cause != rules::Cause::kApplication && current.kind != "hang" &&
      current.place.failed_first && config.first_failure_budget > 0) {
    std::vector<std::uint32_t> streak = {number};
    for (const AttemptEntry* entry : failed) {
      if (!entry->place.failed_first || streak.size() >= config.first_failure_budget) {
        break;
      }
      streak.insert(streak.begin(), entry->place.number);
    }
    if (streak.size() >= config.first_failure_budget) {
      decision.action = rules::Action::kExcludeNode;
      decision.why = fmt::format("this node failed first in {} in a row ({}): exclude the node",
                                 AttemptList(streak), rules::CauseName(current.cause));
      return decision;
    }
  }

  // The same failure, none of the attempts getting further: the job fails this way for good.
  if (!IsDeviceCause(current.cause) && config.same_failure_budget > 0) {
    std::vector<std::uint32_t> streak = {number};
    const AttemptEntry* later = &current;
    for (const AttemptEntry* entry : failed) {
      if (entry->fingerprint != current.fingerprint || !EndsAttempt(entry->kind) ||
          GotFurther(entry->place.step, later->place.step) ||
          streak.size() >= config.same_failure_budget) {
        break;
      }
      streak.insert(streak.begin(), entry->place.number);
      later = entry;
    }
    if (streak.size() >= config.same_failure_budget) {
      decision.action = rules::Action::kCancelRetries;
      decision.why =
          fmt::format("{} failed the same way, none getting further than {}: retrying repeats it",
                      AttemptList(streak), detect::StepText(current.place.step));
      return decision;
    }
    if (streak.size() > 1) {
      decision.why = fmt::format(
          "the {} attempt in a row to fail the same way without getting further; "
          "cancel_retries at {}",
          Ordinal(static_cast<std::uint32_t>(streak.size())), config.same_failure_budget);
    }
  }

  // Attempts that come faster than anyone can look at them.
  if (config.storm_attempts > 1) {
    std::uint32_t within = 1;
    for (const AttemptEntry* entry : failed) {
      if (current.opened - entry->opened > config.storm_window) {
        break;
      }
      ++within;
    }
    if (within >= config.storm_attempts) {
      decision.action = rules::Action::kRestartStorm;
      decision.why = fmt::format("{} attempts failed within {}: a restart storm; stop and look",
                                 within, FormatDuration(config.storm_window));
      return decision;
    }
  }

  // Progress: retrying pays while each attempt gets further.
  if (!failed.empty() && !IsDeviceCause(current.cause) &&
      GotFurther(failed.front()->place.step, current.place.step) &&
      current.action != rules::Action::kExcludeNode &&
      current.action != rules::Action::kRebootNode) {
    decision.action = rules::Action::kRetry;
    decision.why =
        fmt::format("attempt {} got further than attempt {} ({} after {}): retry", number,
                    failed.front()->place.number, detect::StepText(current.place.step),
                    detect::StepText(failed.front()->place.step));
  }
  return decision;
}

}  // namespace trainwatch::ops
