#include "diagnose/suspects_json.h"

#include <nlohmann/json.hpp>

namespace trainwatch::diagnose {

nlohmann::json SuspectsJson(const std::vector<Suspect>& suspects, const std::string& host) {
  nlohmann::json out = nlohmann::json::array();
  for (const Suspect& suspect : suspects) {
    nlohmann::json entry = {{"label", suspect.label},
                            {"rank", suspect.rank ? nlohmann::json(*suspect.rank) : nullptr},
                            {"pid", suspect.pid},
                            {"reason", suspect.reason}};
    if (!host.empty()) {
      entry["host"] = host;
    }
    out.push_back(std::move(entry));
  }
  return out;
}

nlohmann::json StackVerdictJson(const StackVerdict& verdict) {
  return {{"kind", verdict.kind},
          {"cause", rules::CauseName(verdict.verdict.cause)},
          {"action", rules::ActionName(verdict.verdict.action)},
          {"says", verdict.says},
          {"culprits", verdict.culprits}};
}

}  // namespace trainwatch::diagnose
