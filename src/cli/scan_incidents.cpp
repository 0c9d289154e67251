#include "cli/scan_incidents.h"

#include <map>
#include <string>

#include "core/time_format.h"
#include "detect/incident_json.h"
#include "detect/incident_root.h"
#include "ops/recurrence_book.h"

namespace trainwatch::cli {
namespace {

// "train.log lines 120-160, rank1.log line 88".
std::string WhereItFired(const detect::Incident& incident) {
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> lines;  // per file: first, last
  std::vector<std::string> order;
  for (const detect::Firing& firing : incident.firings) {
    auto [it, added] = lines.try_emplace(firing.stream, firing.event.line, firing.event.line);
    if (added) {
      order.push_back(firing.stream);
    }
    it->second.first = std::min(it->second.first, firing.event.line);
    it->second.second = std::max(it->second.second, firing.event.line);
  }
  std::string where;
  for (const std::string& file : order) {
    const auto [first, last] = lines[file];
    where += (where.empty() ? "" : ", ") + file +
             (first == last ? " line " + std::to_string(first)
                            : " lines " + std::to_string(first) + "-" + std::to_string(last));
  }
  return where;
}

void PrintText(std::ostream& out, const incident::IncidentReplay::Outcome& outcome) {
  const std::size_t count = outcome.incidents.size();
  if (count == 0) {
    out << "trainwatch: no incident: what fired were warnings, which open none\n";
    return;
  }
  out << "trainwatch: " << count << (count == 1 ? " incident" : " incidents")
      << " the daemon would have opened from these lines:\n";
  for (std::size_t i = 0; i < count; ++i) {
    const detect::Incident& incident = outcome.incidents[i];
    out << "incident " << i + 1 << "  " << detect::IncidentKindName(incident) << ": "
        << incident.summary << "\n";
    if (const detect::Firing* root = detect::RootError(incident.firings)) {
      out << "  first      " << (root->rank ? "rank " + std::to_string(*root->rank) + ", " : "")
          << root->stream << ":" << root->event.line
          << " (the error its peers' failures followed)\n";
    }
    out << "  verdict    cause " << rules::CauseName(incident.verdict.verdict.cause) << ", action "
        << rules::ActionName(incident.verdict.verdict.action) << ": " << incident.verdict.why
        << "\n";
    out << "  rules      ";
    for (std::size_t r = 0; r < incident.rules.size(); ++r) {
      out << (r == 0 ? "" : ", ") << incident.rules[r];
    }
    out << "\n  firings    " << incident.firings.size() + incident.more_firings << " at "
        << WhereItFired(incident) << "\n";
    out << "  fingerprint " << incident.fingerprint << ops::RecurrenceText(incident.recurrence)
        << "\n";
    if (incident.opened != outcome.start) {  // the log said when
      out << "  opened     " << FormatUtc(incident.opened) << "\n";
    }
    for (const incident::IncidentReplay::FollowUp& follow_up : outcome.follow_ups) {
      if (follow_up.incident_id == incident.id) {
        const detect::Event& event = follow_up.firing.event;
        out << "  follow-up  " << follow_up.firing.stream << ":" << event.line << " "
            << event.rule_id << ": " << (event.summary.empty() ? event.text : event.summary) << " ("
            << follow_up.why << ")\n";
      }
    }
  }
}

}  // namespace

void PrintReplayedIncidents(std::ostream& out, EventFormat format,
                            const incident::IncidentReplay::Outcome& outcome) {
  if (format == EventFormat::kText) {
    PrintText(out, outcome);
    return;
  }
  for (const detect::Incident& incident : outcome.incidents) {
    out << detect::IncidentJson(incident) << "\n";
    for (const incident::IncidentReplay::FollowUp& follow_up : outcome.follow_ups) {
      if (follow_up.incident_id == incident.id) {
        out << detect::FollowUpJson(follow_up.incident_id, follow_up.firing, follow_up.why) << "\n";
      }
    }
  }
}

}  // namespace trainwatch::cli
