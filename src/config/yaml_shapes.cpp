#include "config/yaml_shapes.h"

namespace trainwatch::config {

bool IsNonEmptyList(YamlReader& yaml, const YAML::Node& node, const std::string& what,
                    const std::string& example) {
  if (node.IsNull()) {
    (void)yaml.Scalar(node, what);
    return false;
  }
  if (!node.IsSequence() || node.size() == 0) {
    yaml.Fail(node, what + " must be a non-empty list, like " + example);
    return false;
  }
  return true;
}

bool IsMap(YamlReader& yaml, const YAML::Node& node, const std::string& what,
           const std::string& shape) {
  if (node.IsNull()) {
    (void)yaml.Scalar(node, what);
    return false;
  }
  if (!node.IsMap()) {
    yaml.Fail(node, "'" + what + "' must be a mapping " + shape);
    return false;
  }
  return true;
}

}  // namespace trainwatch::config
