// The suspects as JSON, one shape for the manifest's "ranks" and the bundle record in
// incidents.jsonl: [{"label", "rank" (null when unknown), "pid", "host", "reason"}]. Pure; any
// thread.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "diagnose/stack_verdict.h"
#include "diagnose/suspects.h"

namespace trainwatch::diagnose {

// `host`: where the ranks ran; left out when empty.
nlohmann::json SuspectsJson(const std::vector<Suspect>& suspects, const std::string& host = {});

// What the stacks say (diagnose/stack_verdict.h): {"kind", "cause", "action", "says",
// "culprits"}.
nlohmann::json StackVerdictJson(const StackVerdict& verdict);

}  // namespace trainwatch::diagnose
