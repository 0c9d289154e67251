// Runs every line rule's examples through the real matcher and detector, so a rule's
// `examples: {fires, quiet}` are a test the operator gets for free with `trainwatch check`.
// A fires example must produce an event of the rule at the rule's kind (a traceback Python
// survives is downgraded, so it does not count); a quiet example must not. For threshold
// rules an example counts as firing when its lines match (the count is not applied).
#pragma once

#include <vector>

#include "core/source_location.h"
#include "rules/rule.h"

namespace trainwatch::detect {

// One diagnostic per misbehaving example, at the example's location. Notes about slow
// patterns go to `notes`.
std::vector<Diagnostic> CheckExamples(const std::vector<rules::Rule>& rules,
                                      std::vector<Diagnostic>* notes);

}  // namespace trainwatch::detect
