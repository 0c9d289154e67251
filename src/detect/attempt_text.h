// An incident's attempt (detect::AttemptPlace) in words and read back from its JSON form
// (AttemptJson, detect/incident_json.h): what the report, `trainwatch incidents show`,
// `trainwatch job` and the attempt ledger's restore share. Pure; any thread.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "detect/incident.h"

namespace trainwatch::detect {

// "step 1,200" or "'Epoch 2' 40"; "no step" for none.
std::string StepText(const std::optional<JobStep>& step);

// "attempt 3 of the job; the same failure at step 1,200 as attempts 1 and 2", or "attempt 1
// of the job (no step reached)".
std::string AttemptText(const AttemptPlace& attempt);

// {"label", "count"}, or null for none: how a step is written everywhere.
nlohmann::ordered_json StepJson(const std::optional<JobStep>& step);
// The step in `json` (StepJson's form); none when it is not one.
std::optional<JobStep> StepOfJson(const nlohmann::ordered_json& json);

// The attempt in `json` (an incident record's "attempt"); none when it is not one (no number
// from 1 up). Lists are capped (pids at 64, same_as at 32), texts taken as they are.
std::optional<AttemptPlace> AttemptOfJson(const nlohmann::ordered_json& json);

}  // namespace trainwatch::detect
