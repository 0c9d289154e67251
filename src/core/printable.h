// Text from a log, a rank or a peer shown on an operator's terminal: an escape sequence in it
// could retitle the window, rewrite earlier lines or hide what follows. Control characters (C0
// but tab, DEL, and the C1 range in UTF-8) are shown as visible escapes ("\x1b") instead.
// Pure; any thread.
#pragma once

#include <string>
#include <string_view>

namespace trainwatch {

// `text` with every control character written as "\xNN" (a newline too: one line stays one).
std::string Printable(std::string_view text);

// A URL as logs and `status` may show it: a password in it ("https://user:pw@host") becomes
// "***". The URL itself is used as configured.
std::string ShownUrl(std::string_view url);

}  // namespace trainwatch
