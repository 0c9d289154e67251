#include "core/printable.h"

#include <gtest/gtest.h>

namespace trainwatch {
namespace {

TEST(Printable, EscapesEveryControlButTab) {
  EXPECT_EQ(Printable("plain\ttext é"), "plain\ttext é");
  EXPECT_EQ(Printable("\x1b]0;pwned\x07title"), "\\x1b]0;pwned\\x07title");
  EXPECT_EQ(Printable("a\nb\rc\x7f"), "a\\x0ab\\x0dc\\x7f");
  EXPECT_EQ(Printable("\xc2\x9b"
                      "2J"),
            "\\x9b2J");                          // CSI, the C1 form
  EXPECT_EQ(Printable("\xc2\xa0"), "\xc2\xa0");  // a no-break space stays
  EXPECT_EQ(Printable(std::string("a\0b", 3)), "a\\x00b");
}

TEST(ShownUrl, HidesOnlyThePassword) {
  EXPECT_EQ(ShownUrl("https://alert:s3cr3t@am.corp:9093/x"), "https://alert:***@am.corp:9093/x");
  EXPECT_EQ(ShownUrl("http://u:p@ss@h"), "http://u:***@h");
  EXPECT_EQ(ShownUrl("http://am.corp:9093"), "http://am.corp:9093");
  EXPECT_EQ(ShownUrl("http://user@am.corp:9093"), "http://user@am.corp:9093");
  EXPECT_EQ(ShownUrl("http://am.corp/path?who=a:b@c"), "http://am.corp/path?who=a:b@c");
  EXPECT_EQ(ShownUrl("not a url"), "not a url");
}

}  // namespace
}  // namespace trainwatch
