// The detectors that fire on time and process events rather than on a line: a progress bar
// that stopped advancing, a source gone silent, the writer of a log that vanished mid-bar (the
// OOM killer's SIGKILL leaves no traceback), a wrapped command's exit. Each is a plain
// function or a small state object; time comes in as a value, so tests step it. The daemon
// calls them from its tick and its process events. Single thread.
#pragma once

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "detect/event.h"
#include "detect/progress_tracker.h"
#include "rules/rule.h"
#include "source/child_end.h"
#include "source/writers.h"

namespace trainwatch::detect {

// The writer of a bar must have been seen updating it this recently for its disappearance to
// count as a crash: a bar left behind long ago by a job that went on to other output is not.
constexpr auto kWriterExitWindow = std::chrono::minutes(10);

// "'train' at 41/100", "progress bar at 7".
std::string DescribeBar(const Bar& bar);

// One event per bar of `progress` that `progress_rules` (each a rules::ProgressDetector, the
// index into this vector being its tracker number) find stalled at `now`, each bar and rule
// once until the bar advances again.
// The bars `pace_rules` now find slower than their own recent pace, as events; a bar whose pace
// came back is no event (the lifecycle resolves its incident: ProgressTracker::AnySlow).
std::vector<Event> SlowBars(ProgressTracker& progress, const std::vector<rules::Rule>& pace_rules,
                            SteadyTime now);

std::vector<Event> StalledBars(ProgressTracker& progress,
                               const std::vector<rules::Rule>& progress_rules, SteadyTime now);

// Silence of one source: no byte from any of its streams for a rule's `after`, while a job
// still writes there. Each rule fires once per silence; output ends the silence.
class SilenceWatch {
 public:
  explicit SilenceWatch(SteadyTime start) : last_output_(start) {}
  // A whole line: the silence is over, and each rule may fire again at the next one.
  void OnOutput(SteadyTime now) {
    last_output_ = now;
    reported_.clear();
  }
  // A progress bar redrawn in place (no line yet): the source is not silent, but a silence
  // already reported is not reported again until a line comes.
  void OnRedraw(SteadyTime now) { last_output_ = now; }
  // Events for the rules (each a rules::SilenceDetector) whose silence began by `now`. Ask
  // only while a live stream of a job that has not ended exists: a finished job is quiet for
  // good reason, and a log read as a backlog is history.
  std::vector<Event> Check(const std::vector<rules::Rule>& silence_rules,
                           const std::string& source_name, SteadyTime now);
  SteadyTime last_output() const { return last_output_; }

 private:
  SteadyTime last_output_;
  std::set<std::string> reported_;
};

// The writers of a stream are `gone` (empty when they were never seen: the kernel said the
// last one closed the log and no process holds it); the stream ends its job (its bars are
// finished). A crash event only when the stream ends mid-bar (`ends_mid_bar`: its unfinished
// last line is a bar's refresh) that was still moving within kWriterExitWindow of `now`. A
// writer that ends normally finishes its bar line (tqdm's close prints the '\n', whether the
// bar had no total, "29it", or stopped early, "125/100000"); one killed mid-bar (SIGKILL, the
// OOM killer) cannot. A bar that prints whole lines ("step 41/100") looks the same either way,
// and is not called a crash on the log alone.
std::optional<Event> WriterExited(ProgressTracker& progress, bool ends_mid_bar,
                                  const std::vector<source::WriterProcess>& gone, SteadyTime now);

// The pid a kernel OOM-killer line names ("Out of memory: Killed process 4242 (python3)
// total-vm:...", "Memory cgroup out of memory: Killed process 4242 ..."), if it is one.
std::optional<int> OomKilledPid(std::string_view kmsg_line);

// The writers of a stream are `gone` and the kernel's log says the OOM killer killed one of
// them (`kmsg_line`): a crash whatever the log shows. The stream ends its job.
Event OomKilledWriter(ProgressTracker& progress, std::uint64_t last_line,
                      const std::vector<source::WriterProcess>& gone, std::string_view kmsg_line);

// An event that tells of a failure already reported (the silence after a stall, the exit of a
// writer after its crash): a warning, so it joins the open incident of that failure if it is
// still open and opens no other, whatever `settle` is. `what` names the earlier report.
Event AsFollowUp(Event event, std::string_view what);

// "exited with code 3", "was killed by signal 9 (Killed)".
std::string DescribeEnd(const source::ChildEnd& end);
// One event per `exit` rule (each a rules::ExitDetector) that the end matches; `who` names
// the process ("process 4242 (python3)").
std::vector<Event> ExitEvents(const std::vector<rules::Rule>& exit_rules,
                              const source::ChildEnd& end, const std::string& who);

}  // namespace trainwatch::detect
