#include "incident/alertmanager_sink.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <string>

namespace trainwatch::incident {

AlertmanagerSink::AlertmanagerSink(Env& env, const Pipeline& pipeline, std::string store_path,
                                   alert::AlertOutput::MakeClient make_client,
                                   std::function<bool()> may_write)
    : pipeline_(pipeline),
      alerts_(env, std::move(store_path), std::move(make_client),
              [this](const std::string& id) { return pipeline_.Follows(id); }),
      may_write_(std::move(may_write)) {}

void AlertmanagerSink::Recorded(const detect::Incident& incident) {
  if (pipeline_.Follows(incident.id)) {  // not a manual snapshot, a peer capture, warnings
    alerts_.Open(alert::AlertOf(incident, alerts_.config()));
  }
}

void AlertmanagerSink::EarlyCaptured(const capture::CaptureOutcome& early) {
  if (!may_write_()) {
    return;
  }
  alerts_.Annotate(early.incident_id, {{"bundle", early.host + ":" + early.path},
                                       {"report", "trainwatch report " + early.path}});
}

void AlertmanagerSink::Captured(const capture::CaptureOutcome& outcome) {
  if (outcome.path.empty() || !may_write_()) {
    return;
  }
  std::vector<std::string> suspects;
  for (const diagnose::Suspect& suspect : outcome.suspects) {
    suspects.push_back(suspect.label + ": " + suspect.reason);
  }
  std::map<std::string, std::string> annotations = {
      {"bundle", outcome.host + ":" + outcome.path},
      {"report", "trainwatch report " + outcome.path},
      {"suspects", fmt::format("{}", fmt::join(suspects, "; "))}};
  if (outcome.stacks_say) {
    annotations["stacks_say"] = outcome.stacks_say->says;
  }
  alerts_.Annotate(outcome.incident_id, annotations);
}

void AlertmanagerSink::Resolved(const ops::Resolution& resolution) {
  if (may_write_()) {
    alerts_.Resolve(resolution.id, resolution.at);
  }
}

void AlertmanagerSink::FillSnapshot(ops::DaemonSnapshot& snapshot) const {
  if (!alerts_.enabled()) {
    return;
  }
  const alert::AlertOutputState& state = alerts_.state();
  snapshot.alertmanager = ops::DaemonSnapshot::Alertmanager{
      alerts_.config().urls, state.open,    state.ends_unsent, state.posts_ok,
      state.posts_failed,    state.dropped, state.error};
}

std::uint64_t AlertmanagerSink::Activity() const {
  const alert::AlertOutputState& state = alerts_.state();
  return state.posts_ok + state.posts_failed * 7 + state.open * 13 + state.ends_unsent * 17;
}

}  // namespace trainwatch::incident
