#include "collect/bundle_names.h"

#include <cctype>

namespace trainwatch::collect {

std::string SafeBundleName(std::string_view path) {
  while (true) {
    if (path.starts_with("/")) {
      path.remove_prefix(1);
    } else if (path.starts_with("./")) {
      path.remove_prefix(2);
    } else {
      break;
    }
  }
  std::string name;
  name.reserve(path.size());
  for (char c : path) {
    bool safe =
        std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' || c == '+';
    name += safe ? c : '_';
  }
  if (name.empty() || name == "." || name == "..") {
    return "unnamed";
  }
  return name;
}

std::string UniqueNames::Take(const std::string& name) {
  if (used_.insert(name).second) {
    return name;
  }
  std::size_t dot = name.rfind('.');
  if (dot == 0 || dot == std::string::npos) {
    dot = name.size();
  }
  for (int n = 2;; ++n) {
    std::string candidate = name.substr(0, dot) + "-" + std::to_string(n) + name.substr(dot);
    if (used_.insert(candidate).second) {
      return candidate;
    }
  }
}

}  // namespace trainwatch::collect
