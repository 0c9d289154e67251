// Fuzzes the rule loader on arbitrary rule-file text: it must report problems as diagnostics,
// never crash or throw.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "rules/rule_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  trainwatch::rules::LoadedRules out;
  trainwatch::rules::LoadRuleText(std::string_view(reinterpret_cast<const char*>(data), size),
                                  "fuzz.yaml", out);
  return 0;
}
