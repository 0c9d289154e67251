#include "alert/curl_library.h"

#include <dlfcn.h>

#include <optional>
#include <string>

namespace trainwatch::alert {
namespace {

template <typename Function>
bool Find(void* library, const char* name, Function& function, std::string& missing) {
  function = reinterpret_cast<Function>(::dlsym(library, name));
  if (function == nullptr) {
    missing = name;
  }
  return function != nullptr;
}

Result<const CurlLibrary*> Load() {
  // Never closed: the daemon keeps it for its life once it posts.
  void* library = ::dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = ::dlerror();
    return Error{"cannot load libcurl.so.4 (apt-get install libcurl4): " +
                 std::string(why != nullptr ? why : "unknown error")};
  }
  static CurlLibrary api;
  std::string missing;
  const bool found = Find(library, "curl_global_init", api.global_init, missing) &&
                     Find(library, "curl_multi_init", api.multi_init, missing) &&
                     Find(library, "curl_multi_setopt", api.multi_setopt, missing) &&
                     Find(library, "curl_multi_add_handle", api.multi_add_handle, missing) &&
                     Find(library, "curl_multi_remove_handle", api.multi_remove_handle, missing) &&
                     Find(library, "curl_multi_socket_action", api.multi_socket_action, missing) &&
                     Find(library, "curl_multi_info_read", api.multi_info_read, missing) &&
                     Find(library, "curl_multi_cleanup", api.multi_cleanup, missing) &&
                     Find(library, "curl_multi_strerror", api.multi_strerror, missing) &&
                     Find(library, "curl_easy_init", api.easy_init, missing) &&
                     Find(library, "curl_easy_setopt", api.easy_setopt, missing) &&
                     Find(library, "curl_easy_getinfo", api.easy_getinfo, missing) &&
                     Find(library, "curl_easy_cleanup", api.easy_cleanup, missing) &&
                     Find(library, "curl_easy_strerror", api.easy_strerror, missing) &&
                     Find(library, "curl_slist_append", api.slist_append, missing) &&
                     Find(library, "curl_slist_free_all", api.slist_free_all, missing);
  if (!found) {
    return Error{"libcurl.so.4 has no " + missing + " (too old a libcurl)"};
  }
  if (const CURLcode started = api.global_init(CURL_GLOBAL_DEFAULT); started != CURLE_OK) {
    return Error{"libcurl did not start: " + std::string(api.easy_strerror(started))};
  }
  return &api;
}

}  // namespace

Result<const CurlLibrary*> LoadCurl() {
  static const Result<const CurlLibrary*> loaded = Load();
  return loaded;
}

}  // namespace trainwatch::alert
