// `trainwatch bundles list` and `trainwatch bundles show ID`: the bundles in the config's
// bundles directory, read from their manifests (each bundle's first member).
#pragma once

#include <ostream>
#include <string>

#include "core/result.h"

namespace trainwatch::cli {

struct BundlesOptions {
  std::string config_path;  // empty: the default config
  std::string dir;          // overrides the config's bundles_dir
  std::string id;           // show: an incident id, a file name or a path
  bool json = false;
};

// The bundle `options.id` names: a path, a bundle's file name, or an incident id in the
// bundles directory.
Result<std::string> FindBundle(const BundlesOptions& options, std::ostream& err);

int RunBundlesList(const BundlesOptions& options, std::ostream& out, std::ostream& err);
int RunBundlesShow(const BundlesOptions& options, std::ostream& out, std::ostream& err);

}  // namespace trainwatch::cli
