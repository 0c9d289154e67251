// The `sources` list of the daemon config, read into SourceConfig values
// (config/daemon_config.h): each entry's name, tags, paths or kmsg, and start_at. Split from
// the daemon config parser, which owns the YamlReader and how paths are expanded. Single
// thread.
#pragma once

#include <yaml-cpp/yaml.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/daemon_config.h"
#include "config/yaml_reader.h"

namespace trainwatch::config {

// Parses `node` (the `sources` list) into `out`, recording problems in `yaml`; a source whose
// name is missing, invalid or given before is left out. `path` expands and resolves a path
// field (as the rest of the config does), nullopt when it failed (recorded).
void ParseSources(
    const YAML::Node& node, YamlReader& yaml,
    const std::function<std::optional<std::string>(const YAML::Node&, const std::string&)>& path,
    std::vector<SourceConfig>& out);

}  // namespace trainwatch::config
