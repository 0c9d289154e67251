// Fuzzes the redactor on arbitrary text and environments, and checks its fast path (the
// multi-pattern prefilter) against the plain RE2 reference: both must redact the same.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "collect/redactor.h"

namespace {

using trainwatch::collect::Redactor;
using trainwatch::collect::RedactorMatching;

std::shared_ptr<const Redactor> Make(RedactorMatching matching) {
  auto redactor = Redactor::Create({}, matching);
  if (!redactor) {
    std::abort();
  }
  return *redactor;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto fast = Make(RedactorMatching::kPrefiltered);
  static const auto reference = Make(RedactorMatching::kRe2Only);
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  std::string fast_text(input);
  std::string reference_text(input);
  trainwatch::collect::RedactionCounts fast_counts;
  trainwatch::collect::RedactionCounts reference_counts;
  fast->RedactText(fast_text, fast_counts);
  reference->RedactText(reference_text, reference_counts);
  if (fast_text != reference_text || fast_counts.by_rule != reference_counts.by_rule) {
    std::abort();
  }
  trainwatch::collect::RedactionCounts environment_counts;
  (void)fast->RedactEnvironment(input, environment_counts);
  return 0;
}
