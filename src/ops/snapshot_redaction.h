// The daemon's snapshot (status, the metrics' labels) quotes log text in its bars' labels and
// keys: a tqdm desc may carry a URL with a token. Redacted here before it leaves. Loop thread.
#pragma once

#include <functional>
#include <memory>

#include "collect/redactor.h"
#include "ops/status_json.h"

namespace trainwatch::ops {

// `redactor_of` is asked once, and only when there is a bar (the redactor is built at its
// first use).
void RedactBars(DaemonSnapshot& snapshot,
                const std::function<std::shared_ptr<const collect::Redactor>()>& redactor_of);

}  // namespace trainwatch::ops
