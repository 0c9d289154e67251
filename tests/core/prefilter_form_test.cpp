#include "core/prefilter_form.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace trainwatch {
namespace {

using namespace std::string_literals;

struct FormCase {
  std::string name;
  std::string regex;
  bool segmented;
  std::optional<std::string> form;  // nullopt: RE2 alone
  std::string why;                  // part of the reason, when RE2 alone
};

class PrefilterFormTest : public ::testing::TestWithParam<FormCase> {};

TEST_P(PrefilterFormTest, GivesTheFormOrTheReason) {
  const FormCase& c = GetParam();
  std::string why;
  const std::optional<std::string> form = PrefilterForm(c.regex, c.segmented, &why);
  EXPECT_EQ(form, c.form);
  if (!c.form) {
    EXPECT_NE(why.find(c.why), std::string::npos) << why;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Forms, PrefilterFormTest,
    ::testing::Values(
        FormCase{"Plain", "boom \\d+", true, "boom \\d+", ""},
        // A segment's start and end are ^ and $ of the batch in multiline mode.
        FormCase{"SegmentAnchors", "\\AFOO|BAR\\z", true, "^FOO|BAR$", ""},
        // A text judged whole keeps \A and \z: Hyperscan knows them.
        FormCase{"WholeTextAnchors", "\\AFOO|BAR\\z", false, "\\AFOO|BAR\\z", ""},
        FormCase{"EscapedBackslashBeforeA", "x\\\\A", true, "x\\\\A", ""},
        // Inside \Q...\E, \A is two letters.
        FormCase{"QuotedText", "NCCL \\Qerror\\A\\E\\z", true, "NCCL \\Qerror\\A\\E$", ""},
        FormCase{"UnterminatedQuote", "a\\Q\\z", true, "a\\Q\\z", ""},
        // Without case folding Hyperscan and RE2 agree byte for byte.
        FormCase{"HighByte", "caf\xe9", true, "caf\xe9", ""},
        FormCase{"HexEscape", "caf\\xe9", false, "caf\\xe9", ""},
        FormCase{"UnicodeClass", "\\pL+", false, "\\pL+", ""},
        FormCase{"CaseFoldingTurnedOff", "(?-i)caf\xe9", true, "(?-i)caf\xe9", ""},
        FormCase{"CaselessAscii", "(?i)bearer", false, "(?i)bearer", ""},
        FormCase{"CaselessHighByte", "(?i)caf\xe9", true, std::nullopt, "case-insensitive"},
        FormCase{"CaselessHexEscape", "(?i)caf\\xe9", false, std::nullopt, "case-insensitive"},
        FormCase{"CaselessOctalEscape", "(?i)caf\\351", true, std::nullopt, "case-insensitive"},
        FormCase{"CaselessUnicodeClass", "(?i)\\p{Lu}", false, std::nullopt, "case-insensitive"},
        FormCase{"CaselessGroupLater", "x\xe9 (?si:boom)", true, std::nullopt, "case-insensitive"},
        FormCase{"CaselessQuotedHighByte", "(?i)\\Qcaf\xe9\\E", true, std::nullopt,
                 "case-insensitive"},
        // Hyperscan reads C strings: the pattern would end at the NUL.
        FormCase{"NulByte", "a\0|b"s, false, std::nullopt, "NUL"}),
    [](const ::testing::TestParamInfo<FormCase>& c) { return c.param.name; });

}  // namespace
}  // namespace trainwatch
