#include "config/yaml_shapes.h"

#include <algorithm>
#include <cctype>
#include <charconv>

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

std::optional<std::uint64_t> WholeNumber(YamlReader& yaml, const YAML::Node& node,
                                         const std::string& what, std::uint64_t low,
                                         std::uint64_t high) {
  auto text = yaml.Scalar(node, what);
  if (!text) {
    return std::nullopt;
  }
  // from_chars takes no sign, no base prefix and no white space: digits or nothing.
  std::uint64_t value = 0;
  const char* end = text->data() + text->size();
  const auto [ptr, ec] = std::from_chars(text->data(), end, value);
  if (text->empty() || ec != std::errc() || ptr != end || value < low || value > high) {
    yaml.Fail(node, what + " must be a whole number from " + std::to_string(low) + " to " +
                        std::to_string(high));
    return std::nullopt;
  }
  return value;
}

bool IsPlainName(const std::string& name) {
  auto plain = [](unsigned char c) {
    return std::isalnum(c) != 0 || c == '.' || c == '_' || c == '-';
  };
  return !name.empty() && std::isalnum(static_cast<unsigned char>(name.front())) != 0 &&
         std::all_of(name.begin(), name.end(), plain);
}

}  // namespace trainwatch::config
