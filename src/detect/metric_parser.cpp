#include "detect/metric_parser.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

namespace trainwatch::detect {
namespace {

// The key: "loss", "train loss", "train_loss", "training/loss", "lm loss", quoted or not, not
// glued to a word before it ("val_loss", "avg_loss") nor followed by another word ("loss
// scale: 4096", "loss_scale"). Then ":", "=" or spaces, an optional "tensor(", the value.
const RE2& LossPattern() {
  static const RE2 pattern(
      R"((?i)(?:^|[^\w/.])['"]?(?:train(?:ing)?[_/ ])?(?:lm )?loss['"]?(?:\s*[:=]\s*|\s+)(?:tensor\()?\s*([-+]?(?:nan|inf(?:inity)?|\d+(?:\.\d*)?(?:e[-+]?\d+)?|\.\d+(?:e[-+]?\d+)?))(?:[^\w.]|$))");
  return pattern;
}

const RE2& StepPattern() {
  static const RE2 pattern(
      R"((?i)(?:^|[^\w])(?:global[_ ])?(?:step|iter(?:ation)?)\s*[:=#]?\s*(\d{1,15})\b)");
  return pattern;
}

// fp16's loss scaler skipping a step: DeepSpeed's "OVERFLOW! ... Skipping step", apex's
// "Gradient overflow. Skipping step", Megatron's skipped-iteration count.
const RE2& OverflowPattern() {
  static const RE2 pattern(
      R"((?i)overflow|skipping (?:step|iteration|batch)|skipped iterations?:\s*[1-9])");
  return pattern;
}

double ValueOf(const std::string& text) {
  std::string lower;
  for (char c : text) {
    lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  const bool negative = lower.starts_with('-');
  if (lower.find("nan") != std::string::npos) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  if (lower.find("inf") != std::string::npos) {
    return negative ? -std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::infinity();
  }
  return std::strtod(lower.c_str(), nullptr);
}

}  // namespace

std::optional<LossReading> ReadLoss(std::string_view line) {
  std::string value;
  if (!RE2::PartialMatch(line, LossPattern(), &value)) {
    return std::nullopt;
  }
  LossReading reading;
  reading.value = ValueOf(value);
  reading.finite = std::isfinite(reading.value);
  std::int64_t step = 0;
  if (RE2::PartialMatch(line, StepPattern(), &step)) {
    reading.step = step;
  }
  // Only a value that is not finite is excused by an overflow: a finite line skips the scan.
  reading.overflow = !reading.finite && RE2::PartialMatch(line, OverflowPattern());
  return reading;
}

std::string_view WriterPrefixOf(std::string_view line) {
  static const RE2 pattern(R"(^(\[[^\]]{1,24}\](?:<std(?:out|err)>)?:|\d{1,6}: ))");
  re2::StringPiece prefix;
  if (!RE2::PartialMatch(line, pattern, &prefix)) {
    return {};
  }
  return {prefix.data(), prefix.size()};
}

std::string LossText(double value) {
  if (std::isnan(value)) {
    return "nan";
  }
  if (std::isinf(value)) {
    return value < 0 ? "-inf" : "inf";
  }
  return fmt::format("{:.6g}", value);
}

}  // namespace trainwatch::detect
