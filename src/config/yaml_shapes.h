// Shape checks the config and rule parsers share: is a node a non-empty list, a mapping, a
// whole number in range; is a name plain. Each check records its problem in the YamlReader (an
// empty value at its key) and returns false or nullopt, so the caller skips the value and
// parsing goes on. Single thread.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
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

// Decimal digits only, from `low` to `high` (else recorded: "<what> must be a whole number
// from <low> to <high>"). Not YAML's int conversion, which takes "+5" and "0x10" too.
// `what` ends with the key, as for IsNonEmptyList.
std::optional<std::uint64_t> WholeNumber(YamlReader& yaml, const YAML::Node& node,
                                         const std::string& what, std::uint64_t low,
                                         std::uint64_t high);

// Whether `name` is letters, digits, '.', '_' or '-', starting with a letter or digit (ASCII);
// never empty. Source and command names become parts of messages, bundle file names and metric
// label values, where a space or a slash would break them.
bool IsPlainName(const std::string& name);

}  // namespace trainwatch::config
