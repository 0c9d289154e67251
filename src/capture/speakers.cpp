#include "capture/speakers.h"

#include <algorithm>

#include "core/untrusted_file.h"

namespace trainwatch::capture {

std::set<uid_t> IncidentSpeakers(const detect::Incident& incident) {
  std::set<uid_t> speakers;
  if (incident.peer) {
    // A peer's record was acted on only when its job runs as this node's job does (its uid).
    if (incident.job.uid) {
      speakers.insert(*incident.job.uid);
    }
  } else {
    for (const detect::Firing& firing : incident.firings) {
      if (!firing.file_id.empty()) {
        // A tailed log (the kernel's and wrap's are not files): its owner as read from the
        // file the daemon has open, not from whatever its path names now (a user can swap it
        // for a link to a root-owned file). Unknown: no one's processes (fails closed).
        speakers.insert(firing.file_owner.value_or(kUnknownSpeaker));
      }
      for (const source::WriterProcess& writer : firing.writers) {
        if (writer.uid) {
          speakers.insert(*writer.uid);
        }
      }
    }
  }
  if (std::all_of(speakers.begin(), speakers.end(), [](uid_t uid) { return uid == 0; })) {
    speakers.clear();  // root speaks for everyone
  }
  return speakers;
}

void KeepSpeakersProcesses(const std::set<uid_t>& speakers, const std::string& proc_root,
                           std::vector<int>& pids, std::string& why) {
  if (speakers.empty()) {
    return;
  }
  std::set<uid_t> others;
  std::size_t dropped = 0;
  std::erase_if(pids, [&](int pid) {
    const std::optional<uid_t> owner = ProcessOwner(proc_root, pid);
    if (!owner || speakers.contains(*owner)) {
      return false;  // gone: its remembered facts stay (they are the speaker's writers')
    }
    others.insert(*owner);
    ++dropped;
    return true;
  });
  if (dropped == 0) {
    return;
  }
  auto name = [](uid_t uid) {
    return uid == kUnknownSpeaker ? std::string("unknown") : std::to_string(uid);
  };
  why = std::to_string(dropped) + " process(es) of other users (uid";
  for (const uid_t uid : others) {
    why += ' ';  // piece by piece: " " + ... trips GCC 12's -Wrestrict
    why += name(uid);
  }
  why += ") left out: the incident's lines came from uid";
  for (const uid_t uid : speakers) {
    why += ' ';
    why += name(uid);
  }
  why += "'s log, which speaks for that user's processes only";
}

}  // namespace trainwatch::capture
