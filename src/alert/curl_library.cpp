#include "alert/curl_library.h"

#include <string>

#include "core/shared_library.h"

namespace trainwatch::alert {
namespace {

Result<const CurlLibrary*> Load() {
  Result<SharedLibrary> library = SharedLibrary::Open("libcurl.so.4", "libcurl4");
  if (!library) {
    return library.error();
  }
  static CurlLibrary api;
  const bool found = library->Find("curl_global_init", api.global_init) &&
                     library->Find("curl_multi_init", api.multi_init) &&
                     library->Find("curl_multi_setopt", api.multi_setopt) &&
                     library->Find("curl_multi_add_handle", api.multi_add_handle) &&
                     library->Find("curl_multi_remove_handle", api.multi_remove_handle) &&
                     library->Find("curl_multi_socket_action", api.multi_socket_action) &&
                     library->Find("curl_multi_info_read", api.multi_info_read) &&
                     library->Find("curl_multi_cleanup", api.multi_cleanup) &&
                     library->Find("curl_multi_strerror", api.multi_strerror) &&
                     library->Find("curl_easy_init", api.easy_init) &&
                     library->Find("curl_easy_setopt", api.easy_setopt) &&
                     library->Find("curl_easy_getinfo", api.easy_getinfo) &&
                     library->Find("curl_easy_cleanup", api.easy_cleanup) &&
                     library->Find("curl_easy_strerror", api.easy_strerror) &&
                     library->Find("curl_slist_append", api.slist_append) &&
                     library->Find("curl_slist_free_all", api.slist_free_all);
  if (!found) {
    return Error{library->MissingError()};
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
