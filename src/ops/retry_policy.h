// RetryPolicy: what to do about a job's failure given its earlier attempts (the ledger,
// ops/attempt_ledger.h), stated as the incident's action. In order:
//  - a device or driver failure that came back after a reboot: exclude_node, and the remedy
//    did not work; one that recurs on the same boot: exclude_node;
//  - this node failed first in the last `first_failure_budget` attempts (not for application
//    failures, which follow the job, nor for hangs, which name no first node): exclude_node;
//  - the same failure (fingerprint) in the last `same_failure_budget` attempts, none getting
//    further than the one before: cancel_retries;
//  - `storm_attempts` attempts failing within `storm_window`: restart_storm;
//  - an attempt that got further than the one before: retry;
//  - else the rules' own action.
// Slowdowns, warnings, manual snapshots and peer captures are no failure of an attempt and get
// no decision. Pure; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/daemon_config.h"
#include "core/quantity.h"
#include "ops/attempt_ledger.h"

namespace trainwatch::ops {

using RetryPolicyConfig = config::RetryConfig;

struct RetryDecision {
  rules::Action action = rules::Action::kInspect;
  std::string why;  // empty: the rules' action stands for no reason of the policy's
  std::vector<std::uint32_t> same_as;
  bool remedy_failed = false;
};

// `current` is the attempt's failure (its place, kind, fingerprint, cause and the rules'
// action); `earlier` the job's attempts before it, oldest first.
RetryDecision DecideRetry(const std::vector<AttemptEntry>& earlier, const AttemptEntry& current,
                          const RetryPolicyConfig& config);

// Whether `later` got further than `earlier`: a step where there was none, or a higher count of
// the same bar. Steps of different bars cannot be compared and count as progress (a policy that
// cancels retries must be sure).
bool GotFurther(const std::optional<detect::JobStep>& earlier,
                const std::optional<detect::JobStep>& later);

}  // namespace trainwatch::ops
