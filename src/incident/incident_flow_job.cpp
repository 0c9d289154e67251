// IncidentFlow's answer to "whose job is this?" (incident/incident_flow.h): from an incident's
// writers, a firing's, or the processes the sources know. Split from incident_flow.cpp; the
// same IncidentFlow, loop thread only.
#include <algorithm>
#include <deque>
#include <set>
#include <string_view>
#include <vector>

#include "capture/job_identity.h"
#include "capture/speakers.h"
#include "incident/incident_flow.h"

namespace trainwatch::incident {

namespace {

// The environments that name the processes' jobs (capture::JobEnvironOf), kept while the views
// of them are used.
class JobEnvirons {
 public:
  void Add(const source::WriterProcess& process) {
    texts_.push_back(capture::JobEnvironOf(process));
    uids_.push_back(process.uid);
  }
  std::vector<std::string_view> views() const { return {texts_.begin(), texts_.end()}; }
  const std::vector<std::optional<uid_t>>& uids() const { return uids_; }

 private:
  std::deque<std::string> texts_;
  std::vector<std::optional<uid_t>> uids_;
};

}  // namespace

std::string IncidentFlow::JobIdOf(const detect::Firing& firing) const {
  JobEnvirons environs;
  for (const source::WriterProcess& writer : firing.writers) {
    environs.Add(writer);
  }
  return capture::IdentifyJob(environs.views(), config_.cluster, host_, environs.uids()).id;
}

std::string IncidentFlow::OwnJobId(const detect::Incident& incident) const {
  // Its firings' writers, and those that exited before it was judged (looked up in what the
  // sources remember): never another job's processes that happen to write here too.
  JobEnvirons environs;
  std::vector<int> departed;
  for (const detect::Firing& firing : incident.firings) {
    for (const source::WriterProcess& writer : firing.writers) {
      environs.Add(writer);
    }
    departed.insert(departed.end(), firing.departed_writers.begin(), firing.departed_writers.end());
  }
  const std::vector<source::WriterProcess> known =
      departed.empty() ? std::vector<source::WriterProcess>{} : processes_.Known();
  for (const source::WriterProcess& process : known) {
    if (std::find(departed.begin(), departed.end(), process.pid) != departed.end()) {
      environs.Add(process);
    }
  }
  return capture::IdentifyJob(environs.views(), config_.cluster, host_, environs.uids()).id;
}

detect::JobIdentity IncidentFlow::JobOf(const detect::Incident* incident) const {
  // The incident's own writers first: on a node running two jobs, it is theirs.
  JobEnvirons environs;
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
          environs.Add(writer);
        }
      }
    }
  }
  const std::vector<source::WriterProcess> others = processes_.Known();
  for (const source::WriterProcess& writer : others) {
    if (may_speak(writer)) {
      environs.Add(writer);
    }
  }
  detect::JobIdentity job =
      capture::IdentifyJob(environs.views(), config_.cluster, host_, environs.uids());
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
