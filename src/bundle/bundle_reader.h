// Reads a bundle's manifest (its first member) without unpacking the rest: what `trainwatch
// bundles list` and `bundles show` print. Any thread.
#pragma once

#include <string>

#include "core/result.h"

namespace trainwatch::bundle {

Result<std::string> ReadManifest(const std::string& bundle_path);

}  // namespace trainwatch::bundle
