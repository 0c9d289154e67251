#include "core/quantity.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace trainwatch {
namespace {

TEST(ParseDuration, AcceptsEveryUnit) {
  struct Case {
    const char* text;
    long long millis;
  };
  for (const Case& c : {Case{"500ms", 500}, Case{"30s", 30000}, Case{"10m", 600000},
                        Case{"2h", 7200000}, Case{"1d", 86400000}, Case{"0s", 0}}) {
    auto parsed = ParseDuration(c.text);
    ASSERT_TRUE(parsed.ok()) << c.text << ": " << parsed.error().message;
    EXPECT_EQ(parsed->count(), c.millis) << c.text;
  }
}

TEST(FormatDuration, SaysTheShortestExactFormAndParsesBack) {
  for (const auto& [ms, text] : std::vector<std::pair<long long, std::string>>{{7200000, "2h"},
                                                                               {1800000, "30m"},
                                                                               {5400000, "90m"},
                                                                               {90000, "90s"},
                                                                               {1500, "1500ms"},
                                                                               {0, "0s"}}) {
    EXPECT_EQ(FormatDuration(Duration(ms)), text);
    EXPECT_EQ(*ParseDuration(text), Duration(ms)) << text;
  }
}

TEST(ParseDuration, RefusesBareNumbersAndJunk) {
  for (const char* text : {"30", "", "s", "-5s", "5 s", "5sec", "1.5h", "99999999999999999999s"}) {
    auto parsed = ParseDuration(text);
    EXPECT_FALSE(parsed.ok()) << text;
  }
  EXPECT_NE(ParseDuration("30").error().message.find("needs a unit"), std::string::npos);
}

TEST(ParseByteSize, AcceptsBinaryAndDecimalUnits) {
  EXPECT_EQ(*ParseByteSize("64KiB"), 65536u);
  EXPECT_EQ(*ParseByteSize("100MiB"), 100u << 20);
  EXPECT_EQ(*ParseByteSize("2GiB"), 2ull << 30);
  EXPECT_EQ(*ParseByteSize("5MB"), 5000000u);
  EXPECT_EQ(*ParseByteSize("123"), 123u);
  EXPECT_FALSE(ParseByteSize("12XB").ok());
  EXPECT_FALSE(ParseByteSize("99999999999GiB").ok());
}

TEST(FormatByteSize, PicksTheLargestUnitBelow1024) {
  EXPECT_EQ(FormatByteSize(0), "0 B");
  EXPECT_EQ(FormatByteSize(1023), "1023 B");
  EXPECT_EQ(FormatByteSize(1536), "1.5 KiB");
  EXPECT_EQ(FormatByteSize(4 << 20), "4.0 MiB");
  EXPECT_EQ(FormatByteSize(std::uint64_t{3} << 40), "3.0 TiB");
}

}  // namespace
}  // namespace trainwatch
