#include "incident/metrics_sink.h"

#include "detect/incident_json.h"

namespace trainwatch::incident {

void MetricsSink::Fired(const ops::FiringLog::Said& firing,
                        detect::IncidentBuilder::Disposition /*disposition*/,
                        const detect::Incident* /*open*/) {
  ++counters_.firings_by_rule[firing.rule];  // every firing, in cooldown or not
}

void MetricsSink::Recorded(const detect::Incident& incident) {
  ++counters_.incidents_by_kind[detect::IncidentKindName(incident)];
  ++counters_
        .incidents_by_verdict[{std::string(rules::CauseName(incident.verdict.verdict.cause)),
                               std::string(rules::ActionName(incident.verdict.verdict.action))}];
}

void MetricsSink::Resolved(const ops::Resolution& resolution) {
  ++counters_.resolved_by_how[std::string(ops::ResolvedByName(resolution.by))];
}

}  // namespace trainwatch::incident
