// VerdictTally: an incident's verdict from its firings, as they arrive. The alarms decide
// (warnings only when there is nothing else): the most specific cause wins — hardware over
// driver over infrastructure over application over unknown, so a device error outranks the
// timeouts and tracebacks it caused — with its own rule's action; among equals the first to
// fire. A hang alone never says exclude_node (a stall is no proof of a bad node). Counts every
// firing, also those beyond the incident's cap. Value type; single thread.
#pragma once

#include <string>
#include <vector>

#include "detect/event.h"

namespace trainwatch::detect {

struct IncidentVerdict {
  rules::Verdict verdict;
  std::string rule;  // the rule whose firing decided it; empty: none (a manual snapshot)
  // In a few words: "nvidia.xid.device_fatal (hardware) outranks pytorch.nccl.watchdog_timeout
  // (unknown)".
  std::string why;
};

class VerdictTally {
 public:
  void Add(const Event& event);
  IncidentVerdict Result() const;

 private:
  struct Seen {
    std::string rule;
    rules::Verdict verdict;
  };
  // The deciding firing so far among alarms, and among warnings.
  std::optional<Seen> alarm_;
  std::optional<Seen> warning_;
  bool only_hangs_ = true;  // every alarm so far a hang
  // Each other rule with the cause it said, in firing order (a few: for `why`).
  std::vector<Seen> others_;
};

}  // namespace trainwatch::detect
