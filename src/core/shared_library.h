// SharedLibrary: a library loaded at run time (dlopen) rather than linked, for what only some
// daemons use: a linked library and everything it links are mapped and relocated at start in
// every daemon, costing resident memory whether or not it is ever called. Kept for the
// process's life once loaded (never dlclose'd: its functions may be in use anywhere).
// Loop thread (the loaders call it once, then share an immutable table).
#pragma once

#include <string>

#include "core/result.h"

namespace trainwatch {

class SharedLibrary {
 public:
  // `soname`: "libcurl.so.4". `package` names the Debian package in the error.
  static Result<SharedLibrary> Open(const char* soname, const char* package);

  // Sets `function` to the library's `name`; false, remembering `name` as missing, when it
  // has none. Chains with &&: the first missing name is kept.
  template <typename Function>
  bool Find(const char* name, Function& function) {
    function = reinterpret_cast<Function>(Symbol(name));
    if (function == nullptr && missing_.empty()) {
      missing_ = name;
    }
    return function != nullptr;
  }
  // "libcurl.so.4 has no curl_multi_init (too old a libcurl4?)".
  std::string MissingError() const;

 private:
  SharedLibrary(void* handle, std::string soname, std::string package)
      : handle_(handle), soname_(std::move(soname)), package_(std::move(package)) {}
  void* Symbol(const char* name) const;

  void* handle_;
  std::string soname_;
  std::string package_;
  std::string missing_;
};

}  // namespace trainwatch
