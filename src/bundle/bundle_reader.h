// Reads a bundle's manifest (its first member) without unpacking the rest: what `trainwatch
// bundles list` and `bundles show` print; and any one member by name (`trainwatch report`
// reads report.html, its second). Any thread.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"

namespace trainwatch::bundle {

Result<std::string> ReadManifest(const std::string& bundle_path);
// The same from a bundle's bytes in memory; `name` names it in errors.
Result<std::string> ReadManifestFromMemory(std::string_view bytes, const std::string& name);
// The member named `member`; an error naming the bundle when it has none.
Result<std::string> ReadMember(const std::string& bundle_path, const std::string& member);

}  // namespace trainwatch::bundle
