#include "diagnose/wait_straggler.h"

#include <fmt/format.h>

#include <algorithm>

#include "diagnose/suspects.h"

namespace trainwatch::diagnose {
namespace {

// The peers must spend this share of their time waiting for the difference to mean anything
// (a job whose ranks barely wait is as fast as its slowest already, or not synchronous). A
// straggler 1.3x slower leaves its peers waiting about 0.3/1.3 = 23% of each step.
constexpr double kMinPeerShare = 0.15;
// The straggler's share stands this far below every peer's, and below half of theirs: at 150
// samples a share's noise is about 3.5 points.
constexpr double kMinGap = 0.12;

int Samples(const RankState& rank) {
  int total = 0;
  for (const auto& [key, count] : rank.waits) {
    total += count;
  }
  return total;
}

double Share(const RankState& rank, const std::string& key) {
  const int total = Samples(rank);
  const auto found = rank.waits.find(key);
  return total == 0 || found == rank.waits.end() ? 0.0 : static_cast<double>(found->second) / total;
}

std::string PercentOfShare(double share) { return fmt::format("{:.0f}%", 100 * share); }

// Whether the lowest share stands apart from the others (`next` the lowest of them): they wait
// enough to mean something, and it waits far less, and less than half as much.
bool StandsApart(double lowest, double next) {
  return next >= kMinPeerShare && next - lowest >= kMinGap && lowest <= next / 2;
}

// The others' shares as the reasons say them: "68%", or "68%-69%".
std::string SharesText(double next, double highest) {
  return next == highest ? PercentOfShare(next)
                         : PercentOfShare(next) + "-" + PercentOfShare(highest);
}

}  // namespace

bool IsPeerWait(const std::string& key) {
  return key.find("futex") != std::string::npos || key.find("sk_wait") != std::string::npos ||
         key.find("epoll") != std::string::npos || key.find("ep_poll") != std::string::npos;
}

std::optional<WaitStraggler> StragglerByWaits(const std::vector<RankState>& ranks) {
  std::vector<std::size_t> sampled;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i].alive && Samples(ranks[i]) >= kMinWaitSamples) {
      sampled.push_back(i);
    }
  }
  if (sampled.size() < 2) {
    return std::nullopt;
  }
  // The wait the job's ranks spend most time in, all of them together.
  std::map<std::string, double> total_share;
  for (std::size_t i : sampled) {
    for (const auto& [key, count] : ranks[i].waits) {
      if (IsPeerWait(key)) {
        total_share[key] += Share(ranks[i], key);
      }
    }
  }
  if (total_share.empty()) {
    return std::nullopt;
  }
  const std::string wait =
      std::max_element(total_share.begin(), total_share.end(), [](const auto& a, const auto& b) {
        return a.second < b.second;
      })->first;
  std::sort(sampled.begin(), sampled.end(), [&](std::size_t a, std::size_t b) {
    return Share(ranks[a], wait) < Share(ranks[b], wait);
  });
  const double lowest = Share(ranks[sampled[0]], wait);
  const double next = Share(ranks[sampled[1]], wait);
  const double highest = Share(ranks[sampled.back()], wait);
  if (!StandsApart(lowest, next)) {
    return std::nullopt;
  }
  const RankState& straggler = ranks[sampled[0]];
  // Where its time goes instead.
  std::string instead;
  int most = 0;
  for (const auto& [key, count] : straggler.waits) {
    if (key != wait && count > most) {
      most = count;
      instead = key;
    }
  }
  std::string reason =
      fmt::format("waits for its peers least ({} in {} of {} samples; {} {})", wait,
                  PercentOfShare(lowest), Samples(straggler),
                  sampled.size() == 2 ? "its peer" : "its peers", SharesText(next, highest));
  if (!instead.empty()) {
    reason += fmt::format(", mostly {} ({})", instead, PercentOfShare(Share(straggler, instead)));
  }
  return WaitStraggler{sampled[0], std::move(reason)};
}

std::optional<NodeWaits> SumWaits(const std::vector<std::map<std::string, int>>& ranks) {
  NodeWaits sum;
  for (const std::map<std::string, int>& waits : ranks) {
    int samples = 0;
    int peer = 0;
    for (const auto& [key, count] : waits) {
      samples += count;
      peer += IsPeerWait(key) ? count : 0;
    }
    if (samples >= kMinWaitSamples) {
      sum.samples += samples;
      sum.peer_waits += peer;
      ++sum.ranks;
    }
  }
  return sum.ranks > 0 ? std::optional(sum) : std::nullopt;
}

std::optional<SlowNode> SlowNodeByWaits(const std::vector<NodeWaits>& nodes,
                                        const std::vector<std::string>& names) {
  auto share = [](const NodeWaits& node) {
    return static_cast<double>(node.peer_waits) / node.samples;
  };
  std::vector<std::size_t> sampled;
  for (std::size_t i = 0; i < nodes.size() && i < names.size(); ++i) {
    if (nodes[i].samples >= kMinWaitSamples) {
      sampled.push_back(i);
    }
  }
  if (sampled.size() < 2) {
    return std::nullopt;
  }
  std::sort(sampled.begin(), sampled.end(),
            [&](std::size_t a, std::size_t b) { return share(nodes[a]) < share(nodes[b]); });
  const double lowest = share(nodes[sampled[0]]);
  const double next = share(nodes[sampled[1]]);
  if (!StandsApart(lowest, next)) {
    return std::nullopt;
  }
  const NodeWaits& slow = nodes[sampled[0]];
  std::string others;
  for (std::size_t i = 1; i < sampled.size() && i <= 3; ++i) {
    others += (i > 1 ? ", " : "") + names[sampled[i]];
  }
  if (sampled.size() > 4) {
    others += fmt::format(" and {} more", sampled.size() - 4);
  }
  return SlowNode{
      sampled[0],
      fmt::format("its ranks wait for their peers least ({} of {} samples over {} {}; {}'s {})",
                  PercentOfShare(lowest), slow.samples, slow.ranks,
                  slow.ranks == 1 ? "rank" : "ranks", others,
                  SharesText(next, share(nodes[sampled.back()])))};
}

}  // namespace trainwatch::diagnose
