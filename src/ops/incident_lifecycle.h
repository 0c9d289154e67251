// IncidentLifecycle: which written incidents are still open, and what resolves each. An
// incident is open from its record until
//  - its pace came back: a slow incident's stream advances with no bar slow any more;
//  - its job went on: a hang's stream advances a bar again (a stream without bars prints a
//    line, for a hang told by time alone); a bar advances on any stream at least kDeviceGrace
//    after a device incident opened (the device serves the job again; the ranks finishing
//    the step they were in right after the error do not count). A crash does not resolve this way:
//    in a log several ranks share, the others' bars move on after one rank dies, until the
//    collective watchdog stops them;
//  - its job restarted: a stream it fired on (or a file of its source first seen after it
//    opened) is written by processes none of which wrote it before — all of the old writers
//    gone, not one new one beside them (a DataLoader worker forked by the living job is no
//    restart);
//  - an operator acknowledged it (`trainwatch incidents ack ID`).
// Resolution is a second record in incidents.jsonl ({"resolved": id, ...}); its rules' cooldown
// ends with it, so the same stall after recovery opens a new incident. Incidents still open at
// a restart are restored from the log and go on resolving. Bounded: kMaxOpen, the oldest
// forgotten first (it stays open in the log, where an ack still resolves it). Loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "detect/incident.h"
#include "detect/progress_tracker.h"

namespace trainwatch::ops {

using detect::SteadyTime;
using detect::WallTime;

enum class ResolvedBy { kProgress, kRestart, kAck, kLine };
std::string_view ResolvedByName(ResolvedBy by);

struct Resolution {
  std::string id;
  ResolvedBy by = ResolvedBy::kAck;
  std::string why;  // "progress resumed on /logs/train.log ('train' at 42/100)"
  WallTime at{};
  WallTime opened{};
  std::vector<std::string> rules;  // whose cooldown ends
  std::string job_id;              // its job, where known
};

// An open incident as the lifecycle needs it (from a written incident, or its record).
struct OpenIncident {
  std::string id;
  rules::RuleKind kind = rules::RuleKind::kCrash;
  std::vector<std::string> rules;
  std::string job_id;                          // empty: unknown
  std::set<std::string, std::less<>> sources;  // the config sources of its firings
  std::set<std::string, std::less<>> streams;  // StreamKey(source, stream) of its firings
  std::set<int> writers;                       // the pids that wrote its streams when it fired
  WallTime opened_wall{};
  SteadyTime opened{};    // restored ones: when the daemon started
  bool restored = false;  // from the log at a restart: every file is "first seen" after it
  // A hang told by time alone (a stall, a silence), no line saying so: a line on a stream
  // without bars is progress. A hang a line told of (an NCCL watchdog, a faulthandler dump, a
  // hung task) is followed by more lines of the same failure: only a bar's advance counts.
  bool output_resumes = false;
  // Its firings' (rule, text), the first kMaxTextsPerRule of each rule: what a resolving line
  // is checked against; each line takes away those it ends (ResolveByLine).
  static constexpr std::size_t kMaxTextsPerRule = 16;
  std::vector<std::pair<std::string, std::string>> rule_texts;
};

// Keeps `text` of `rule` in `incident.rule_texts`, once, up to kMaxTextsPerRule of each rule;
// whether it kept it (false: kept before, or the cap reached).
bool AddRuleText(OpenIncident& incident, const std::string& rule, const std::string& text);
// Whether `rule` fired in `incident` from `source`.
bool FiredIn(const OpenIncident& incident, std::string_view rule, std::string_view source);

std::string StreamKey(std::string_view source, std::string_view stream);

// An operator's ack of `id` at `at`, with the note `why` (may be empty); `opened`, when known,
// gives the record its open_seconds. The daemon's and the CLI's (no daemon) are the same.
Resolution AckResolution(const std::string& id, const std::string& why, WallTime at,
                         WallTime opened = {});

// What a stream shows now, for Observe.
struct StreamActivity {
  std::string_view source;
  std::string_view stream;
  const detect::Bar* latest_bar = nullptr;  // the bar updated last; null when it has none
  SteadyTime last_advance{};                // of any of its bars
  SteadyTime last_line{};                   // its last whole line
  SteadyTime first_seen{};                  // when the daemon began to follow it
  const std::vector<source::WriterProcess>* writers = nullptr;  // null or empty: none known
  // A pace rule holds one of its bars slow (ProgressTracker::AnySlow), or the job's own reports
  // say its ranks are still uneven (SpreadRuns::SaysSlow).
  bool slow = false;
  // When the job's own report last said its ranks are even (SpreadRuns); epoch: never.
  SteadyTime last_even_report{};
};

class IncidentLifecycle {
 public:
  static constexpr std::size_t kMaxOpen = 256;
  static constexpr std::chrono::seconds kDeviceGrace{60};

  // A written incident: open from now. A manual snapshot or warnings alone are no failure of
  // the job and never open.
  void Open(const detect::Incident& incident, SteadyTime now);
  // An incident still open at the last stop.
  void Restore(OpenIncident incident);
  // Is any open? Observe is worth calling only then.
  bool any_open() const { return !open_.empty(); }
  std::size_t open_count() const { return open_.size(); }
  const std::vector<OpenIncident>& open() const { return open_; }
  bool IsOpen(std::string_view id) const;

  // One stream's state; the incidents it resolves are taken by TakeResolved.
  void Observe(const StreamActivity& activity, WallTime wall_now);
  std::vector<Resolution> TakeResolved();
  // `rule` fired again from `source` with `text` and opened nothing (cooled down, or followed
  // an incident up): each open incident it fired in from there keeps the text too, so that a
  // second server lost is resolved only by its own line as well. The ids of those that took
  // it (a new text), for the record that keeps it across a restart.
  std::vector<std::string> FiredAgain(std::string_view rule, std::string_view source,
                                      const std::string& text);
  // Whether FiredAgain could keep a text of `rule` from `source` (an open incident holds both).
  bool Follows(std::string_view rule, std::string_view source) const;
  // A resolving rule's line from `source` (rules::Rule::resolves): in each open incident `rule`
  // fired in from there, ends the firings of it whose text `same_failure` accepts (the same
  // server); an incident with none of them left is resolved. Taken by TakeResolved; how many
  // were resolved.
  std::size_t ResolveByLine(std::string_view rule, std::string_view source,
                            const std::function<bool(std::string_view text)>& same_failure,
                            const std::string& why, WallTime wall_now);
  // An operator's ack of `id`, open here or not (one forgotten past kMaxOpen, or of an earlier
  // run): the resolution to record. `why` is the operator's note (may be empty).
  Resolution Ack(const std::string& id, const std::string& why, WallTime wall_now);

 private:
  void Resolve(std::size_t index, ResolvedBy by, std::string why, WallTime wall_now);

  std::vector<OpenIncident> open_;  // oldest first
  std::vector<Resolution> resolved_;
};

}  // namespace trainwatch::ops
