#include "incident/firing_rank.h"

#include <algorithm>

#include "collect/rank_identity.h"
#include "diagnose/suspects.h"

namespace trainwatch::incident {
namespace {

// The one rank `writers` name; nullopt when none does or two disagree.
std::optional<int> AgreedRank(const std::vector<const source::WriterProcess*>& writers) {
  std::optional<int> agreed;
  for (const source::WriterProcess* writer : writers) {
    const std::optional<int> rank = collect::RankInEnviron(writer->environ);
    if (!rank) {
      continue;  // a launcher or a tee beside the rank: it speaks for no rank
    }
    if (agreed && *agreed != *rank) {
      return std::nullopt;  // several ranks write here, without prefixes
    }
    agreed = rank;
  }
  return agreed;
}

}  // namespace

std::optional<int> RankOfFiring(
    const detect::Firing& firing,
    const std::function<std::vector<source::WriterProcess>()>& remembered) {
  if (firing.event.rank) {
    return firing.event.rank;  // the rank the line is about (a report rank 0 prints of rank 5)
  }
  if (std::optional<int> prefixed = diagnose::RankOfLine(firing.event.text)) {
    return prefixed;
  }
  std::vector<const source::WriterProcess*> writers;
  for (const source::WriterProcess& writer : firing.writers) {
    writers.push_back(&writer);
  }
  if (std::optional<int> rank = AgreedRank(writers)) {
    return rank;
  }
  if (firing.departed_writers.empty() || !remembered) {
    return std::nullopt;
  }
  const std::vector<source::WriterProcess> known = remembered();
  for (const source::WriterProcess& process : known) {
    if (std::find(firing.departed_writers.begin(), firing.departed_writers.end(), process.pid) !=
        firing.departed_writers.end()) {
      writers.push_back(&process);
    }
  }
  return AgreedRank(writers);
}

}  // namespace trainwatch::incident
