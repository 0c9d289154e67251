// Reads a bundle's manifest (its first member) without unpacking the rest: what `trainwatch
// bundles list` and `bundles show` print. Any thread.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"

namespace trainwatch::bundle {

Result<std::string> ReadManifest(const std::string& bundle_path);
// The same from a bundle's bytes in memory; `name` names it in errors.
Result<std::string> ReadManifestFromMemory(std::string_view bytes, const std::string& name);

}  // namespace trainwatch::bundle
