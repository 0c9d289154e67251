// Expands the shell-like references operators write in config paths: a leading `~`, `${VAR}`,
// `${VAR:-default}` and `$$`. Nothing else is special (so a later `{pid}` placeholder passes
// through). Pure functions of the text and the environment lookup; any thread.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace trainwatch::config {

// Looks up an environment variable; nullopt when unset. Tests pass a map; the daemon passes
// ProcessEnv().
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// The process environment (getenv).
EnvLookup ProcessEnv();

// Expands, left to right:
//   ~             at the start, alone or before '/': $HOME (an error when HOME is unset or
//                 empty; `~user` is an error too rather than a directory literally named so)
//   ${VAR}        the variable's value (empty if set but empty); an error when unset
//   ${VAR:-dflt}  the value, or `dflt` when VAR is unset OR empty; `dflt` is expanded itself
//                 (it may start with ~ and hold ${...}) and only when it is used
//   $$            a literal '$'
// Any other '$' is an error: `$HOME/x` would otherwise silently name a directory "$HOME".
// Values are inserted as they are, never expanded again. VAR is [A-Za-z_][A-Za-z0-9_]*.
Result<std::string> ExpandPath(std::string_view text, const EnvLookup& env);

}  // namespace trainwatch::config
