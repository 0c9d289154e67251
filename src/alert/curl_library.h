// libcurl, loaded at run time (dlopen) the first time the daemon posts an alert, not linked:
// linked, it and the TLS, Kerberos, LDAP and SSH libraries it brings are loaded into every
// daemon (about 4 MiB of resident memory measured here), most of which never post an alert.
// The functions CurlHttpClient calls, from libcurl.so.4 (Debian's libcurl4, a Depends of the
// package). Loop thread (loads once; the table is immutable after).
#pragma once

#include <curl/curl.h>

#include "core/result.h"

namespace trainwatch::alert {

struct CurlLibrary {
  decltype(&curl_global_init) global_init = nullptr;
  decltype(&curl_multi_init) multi_init = nullptr;
  decltype(&curl_multi_setopt) multi_setopt = nullptr;
  decltype(&curl_multi_add_handle) multi_add_handle = nullptr;
  decltype(&curl_multi_remove_handle) multi_remove_handle = nullptr;
  decltype(&curl_multi_socket_action) multi_socket_action = nullptr;
  decltype(&curl_multi_info_read) multi_info_read = nullptr;
  decltype(&curl_multi_cleanup) multi_cleanup = nullptr;
  decltype(&curl_multi_strerror) multi_strerror = nullptr;
  decltype(&curl_easy_init) easy_init = nullptr;
  decltype(&curl_easy_setopt) easy_setopt = nullptr;
  decltype(&curl_easy_getinfo) easy_getinfo = nullptr;
  decltype(&curl_easy_cleanup) easy_cleanup = nullptr;
  decltype(&curl_easy_strerror) easy_strerror = nullptr;
  decltype(&curl_slist_append) slist_append = nullptr;
  decltype(&curl_slist_free_all) slist_free_all = nullptr;
};

// The library, loaded and initialised (curl_global_init) at the first call; the same table
// after. Fails, saying why, when libcurl.so.4 or one of its functions is missing.
Result<const CurlLibrary*> LoadCurl();

}  // namespace trainwatch::alert
