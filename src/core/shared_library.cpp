#include "core/shared_library.h"

#include <dlfcn.h>

namespace trainwatch {

Result<SharedLibrary> SharedLibrary::Open(const char* soname, const char* package) {
  void* handle = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    return Error{std::string("cannot load ") + soname + " (apt-get install " + package +
                 "): " + (why != nullptr ? why : "unknown error")};
  }
  return SharedLibrary(handle, soname, package);
}

void* SharedLibrary::Symbol(const char* name) const { return ::dlsym(handle_, name); }

std::string SharedLibrary::MissingError() const {
  return soname_ + " has no " + missing_ + " (too old a " + package_ + "?)";
}

}  // namespace trainwatch
