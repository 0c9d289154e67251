#include "config/path_expand.h"

#include <cstdlib>

namespace trainwatch::config {
namespace {

bool IsNameStart(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }

bool IsName(std::string_view name) {
  if (name.empty() || !IsNameStart(name.front())) {
    return false;
  }
  for (char c : name) {
    if (!IsNameChar(c)) {
      return false;
    }
  }
  return true;
}

// The index of the '}' closing a "${" whose body starts at `begin`, or npos. A default may
// nest "${...}", so braces are counted; "$$" is one unit, so "$${" opens nothing.
std::size_t FindClose(std::string_view text, std::size_t begin) {
  int depth = 1;
  for (std::size_t i = begin; i < text.size(); ++i) {
    if (text[i] == '$' && i + 1 < text.size() && (text[i + 1] == '$' || text[i + 1] == '{')) {
      depth += text[i + 1] == '{' ? 1 : 0;
      ++i;
    } else if (text[i] == '}' && --depth == 0) {
      return i;
    }
  }
  return std::string_view::npos;
}

}  // namespace

EnvLookup ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) {
      return std::nullopt;
    }
    return std::string(value);
  };
}

Result<std::string> ExpandPath(std::string_view text, const EnvLookup& env) {
  std::string out;
  std::size_t i = 0;
  if (!text.empty() && text.front() == '~') {
    if (text.size() > 1 && text[1] != '/') {
      return Error{"'~user' is not supported: write that user's home directory out"};
    }
    const auto home = env("HOME");
    if (!home || home->empty()) {
      return Error{"'~' needs $HOME, which is not set"};
    }
    out = *home;
    i = 1;
  }
  while (i < text.size()) {
    const char c = text[i];
    if (c != '$') {
      out += c;
      ++i;
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '$') {
      out += '$';
      i += 2;
      continue;
    }
    if (i + 1 >= text.size() || text[i + 1] != '{') {
      return Error{"a '$' must start ${NAME} or ${NAME:-default}; write $$ for a literal '$'"};
    }
    const std::size_t close = FindClose(text, i + 2);
    if (close == std::string_view::npos) {
      return Error{"unterminated '${' (no matching '}')"};
    }
    const std::string_view body = text.substr(i + 2, close - (i + 2));
    const std::size_t separator = body.find(":-");
    const std::string name(body.substr(0, separator));
    if (!IsName(name)) {
      return Error{"'${" + std::string(body) +
                   "}' does not name a variable (write ${NAME} or ${NAME:-default})"};
    }
    const auto value = env(name);
    if (separator != std::string_view::npos && (!value || value->empty())) {
      auto fallback = ExpandPath(body.substr(separator + 2), env);
      if (!fallback) {
        return fallback.error();
      }
      out += *fallback;
    } else if (!value) {
      return Error{"environment variable '" + name + "' is not set (give a default: ${" + name +
                   ":-...})"};
    } else {
      out += *value;
    }
    i = close + 1;
  }
  return out;
}

}  // namespace trainwatch::config
