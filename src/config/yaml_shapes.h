// Shape checks the daemon config's section parsers share: is a node a non-empty list, is it a
// mapping. Each records its problem in the YamlReader (an empty value at its key) and returns
// false, so the caller skips the section and parsing goes on. Single thread.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "config/yaml_reader.h"

namespace trainwatch::config {

// False (recorded) unless `node` is a non-empty list. `what` ends with the key, so an empty
// value is reported at the key (see YamlReader::Scalar); `example` shows the shape.
bool IsNonEmptyList(YamlReader& yaml, const YAML::Node& node, const std::string& what,
                    const std::string& example);

// False (recorded) unless `node` is a mapping; `what` is the key, `shape` lists its keys.
bool IsMap(YamlReader& yaml, const YAML::Node& node, const std::string& what,
           const std::string& shape);

}  // namespace trainwatch::config
