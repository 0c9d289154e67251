// IncidentFlow's answer to "whose job is this?" (incident/incident_flow.h): from an incident's
// writers, a firing's, or the processes the sources know. Split from incident_flow.cpp; the
// same IncidentFlow, loop thread only.
#include <algorithm>
#include <set>
#include <string_view>
#include <vector>

#include "capture/job_identity.h"
#include "capture/speakers.h"
#include "incident/incident_flow.h"

namespace trainwatch::incident {

std::string IncidentFlow::JobIdOf(const detect::Firing& firing) const {
  std::vector<std::string_view> environs;
  std::vector<std::optional<uid_t>> uids;
  for (const source::WriterProcess& writer : firing.writers) {
    environs.push_back(writer.environ);
    uids.push_back(writer.uid);
  }
  return capture::IdentifyJob(environs, config_.cluster, host_, uids).id;
}

std::string IncidentFlow::OwnJobId(const detect::Incident& incident) const {
  // Its firings' writers, and those that exited before it was judged (looked up in what the
  // sources remember): never another job's processes that happen to write here too.
  std::vector<std::string_view> environs;
  std::vector<std::optional<uid_t>> uids;
  std::vector<int> departed;
  for (const detect::Firing& firing : incident.firings) {
    for (const source::WriterProcess& writer : firing.writers) {
      environs.push_back(writer.environ);
      uids.push_back(writer.uid);
    }
    departed.insert(departed.end(), firing.departed_writers.begin(), firing.departed_writers.end());
  }
  const std::vector<source::WriterProcess> known =
      departed.empty() ? std::vector<source::WriterProcess>{} : processes_.Known();
  for (const source::WriterProcess& process : known) {
    if (std::find(departed.begin(), departed.end(), process.pid) != departed.end()) {
      environs.push_back(process.environ);
      uids.push_back(process.uid);
    }
  }
  return capture::IdentifyJob(environs, config_.cluster, host_, uids).id;
}

detect::JobIdentity IncidentFlow::JobOf(const detect::Incident* incident) const {
  // The incident's own writers first: on a node running two jobs, it is theirs.
  std::vector<std::string_view> environs;
  std::vector<std::optional<uid_t>> uids;
  // Who raised it: a user's log speaks for that user's job alone (its id is looked up in their
  // processes only, and its record carries their uid, so that no peer acts on another user's
  // job for it). The kernel's lines and root's logs speak for any job here.
  const std::set<uid_t> speakers = incident != nullptr && !incident->peer
                                       ? capture::IncidentSpeakers(*incident)
                                       : std::set<uid_t>{};
  auto may_speak = [&](const source::WriterProcess& writer) {
    return speakers.empty() || (writer.uid && speakers.contains(*writer.uid));
  };
  if (incident != nullptr) {
    for (const detect::Firing& firing : incident->firings) {
      for (const source::WriterProcess& writer : firing.writers) {
        if (may_speak(writer)) {
          environs.push_back(writer.environ);
          uids.push_back(writer.uid);
        }
      }
    }
  }
  const std::vector<source::WriterProcess> others = processes_.Known();
  for (const source::WriterProcess& writer : others) {
    if (may_speak(writer)) {
      environs.push_back(writer.environ);
      uids.push_back(writer.uid);
    }
  }
  detect::JobIdentity job = capture::IdentifyJob(environs, config_.cluster, host_, uids);
  if (!speakers.empty()) {
    // One user (the usual case) or several, or one not known: a uid no peer's job runs as
    // where it is not exactly one known user.
    job.uid = speakers.size() == 1 ? *speakers.begin() : capture::kUnknownSpeaker;
  } else if (!job.uid) {
    job.uid = 0;  // the kernel or root spoke, and no process of the job is known: root's word
  }
  return job;
}

}  // namespace trainwatch::incident
