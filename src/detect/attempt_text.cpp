#include "detect/attempt_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

namespace trainwatch::detect {
namespace {

constexpr std::size_t kMaxPids = 64;
constexpr std::size_t kMaxSameAs = 32;

// Commas every three digits: "1,200". (Built forward: GCC 12 warns falsely on insert.)
std::string Grouped(std::int64_t count) {
  const std::string digits = std::to_string(count < 0 ? -count : count);
  std::string grouped = count < 0 ? "-" : "";
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) {
      grouped += ',';
    }
    grouped += digits[i];
  }
  return grouped;
}

std::string TextOf(const nlohmann::ordered_json& object, const char* key) {
  const auto found = object.find(key);
  return found != object.end() && found->is_string() ? found->get<std::string>() : std::string();
}

bool FlagOf(const nlohmann::ordered_json& object, const char* key) {
  const auto found = object.find(key);
  return found != object.end() && found->is_boolean() && found->get<bool>();
}

}  // namespace

std::string StepText(const std::optional<JobStep>& step) {
  if (!step) {
    return "no step";
  }
  if (step->label.empty() || step->label == "step") {
    return "step " + Grouped(step->count);
  }
  return fmt::format("'{}' {}", step->label, Grouped(step->count));
}

std::string AttemptText(const AttemptPlace& attempt) {
  std::string text = fmt::format("attempt {} of the job", attempt.number);
  if (attempt.same_as.empty()) {
    return text + (attempt.step ? " (at " + StepText(attempt.step) + ")" : " (no step reached)");
  }
  text += "; the same failure at " + StepText(attempt.step) + " as attempt";
  text += attempt.same_as.size() > 1 ? "s " : " ";
  for (std::size_t i = 0; i < attempt.same_as.size(); ++i) {
    if (i > 0) {
      text += i + 1 == attempt.same_as.size() ? " and " : ", ";
    }
    text += std::to_string(attempt.same_as[i]);
  }
  return text;
}

nlohmann::ordered_json StepJson(const std::optional<JobStep>& step) {
  return step ? nlohmann::ordered_json{{"label", step->label}, {"count", step->count}}
              : nlohmann::ordered_json(nullptr);
}

std::optional<JobStep> StepOfJson(const nlohmann::ordered_json& json) {
  if (!json.is_object()) {
    return std::nullopt;
  }
  const auto count = json.find("count");
  if (count == json.end() || !count->is_number_integer()) {
    return std::nullopt;
  }
  return JobStep{TextOf(json, "label"), count->get<std::int64_t>()};
}

std::optional<AttemptPlace> AttemptOfJson(const nlohmann::ordered_json& json) {
  if (!json.is_object()) {
    return std::nullopt;
  }
  const auto number = json.find("number");
  if (number == json.end() || !number->is_number_unsigned() || number->get<std::uint64_t>() == 0 ||
      number->get<std::uint64_t>() > UINT32_MAX) {
    return std::nullopt;
  }
  AttemptPlace place;
  place.number = number->get<std::uint32_t>();
  place.marker = TextOf(json, "marker");
  place.why = TextOf(json, "why");
  place.boot_id = TextOf(json, "boot_id");
  place.remedy_failed = FlagOf(json, "remedy_failed");
  place.failed_first = FlagOf(json, "failed_first");
  if (const auto step = json.find("step"); step != json.end()) {
    place.step = StepOfJson(*step);
  }
  if (const auto pids = json.find("pids"); pids != json.end() && pids->is_array()) {
    for (const auto& pid : *pids) {
      if (pid.is_number_integer() && place.pids.size() < kMaxPids) {
        place.pids.push_back(pid.get<int>());
      }
    }
    std::sort(place.pids.begin(), place.pids.end());
  }
  if (const auto same = json.find("same_as"); same != json.end() && same->is_array()) {
    for (const auto& n : *same) {
      if (n.is_number_unsigned() && n.get<std::uint64_t>() <= UINT32_MAX &&
          place.same_as.size() < kMaxSameAs) {
        place.same_as.push_back(n.get<std::uint32_t>());
      }
    }
  }
  return place;
}

}  // namespace trainwatch::detect
