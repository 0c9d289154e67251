#include "capture/rank_devices.h"

#include <map>
#include <utility>

namespace trainwatch::capture {

void AttachRankDevices(RankReport& report) {
  std::map<std::pair<std::string, int>, int> claims;  // device -> ranks naming it
  std::vector<const collect::DeviceUtilization*> found(report.ranks.size(), nullptr);
  for (std::size_t i = 0; i < report.ranks.size(); ++i) {
    const RankEvidence& rank = report.ranks[i];
    if (!rank.alive) {
      continue;
    }
    found[i] = collect::DeviceOfRank(report.devices, rank.process.identity.devices,
                                     rank.process.identity.local_rank);
    if (found[i] != nullptr) {
      ++claims[{found[i]->tool, found[i]->index}];
    }
  }
  for (std::size_t i = 0; i < report.ranks.size(); ++i) {
    if (found[i] != nullptr && claims[{found[i]->tool, found[i]->index}] == 1) {
      report.ranks[i].device = *found[i];
    }
  }
}

}  // namespace trainwatch::capture
