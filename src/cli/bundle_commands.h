// `trainwatch bundles list` and `trainwatch bundles show ID`: the bundles in the config's
// bundles directory, read from their manifests (each bundle's first member).
#pragma once

#include <ostream>
#include <string>

namespace trainwatch::cli {

struct BundlesOptions {
  std::string config_path;  // empty: the default config
  std::string dir;          // overrides the config's bundles_dir
  std::string id;           // show: an incident id, a file name or a path
  bool json = false;
};

int RunBundlesList(const BundlesOptions& options, std::ostream& out, std::ostream& err);
int RunBundlesShow(const BundlesOptions& options, std::ostream& out, std::ostream& err);

}  // namespace trainwatch::cli
