#include "detect/time_detectors.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <variant>

namespace trainwatch::detect {
namespace {

std::string SecondsAgo(SteadyTime then, SteadyTime now) {
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now - then).count()) + "s";
}

Event EventOf(const rules::Rule& rule) {
  Event event;
  event.rule_id = rule.id;
  event.kind = rule.kind;
  event.verdict = rule.verdict;
  event.role = rule.role;
  return event;
}

// "PID (comm), PID (comm)": the writers a death is said of.
std::string DescribeWriters(const std::vector<source::WriterProcess>& writers) {
  std::string who;
  for (const source::WriterProcess& writer : writers) {
    if (!who.empty()) {
      who += ", ";
    }
    who += std::to_string(writer.pid);
    who += " (";
    who += writer.comm;
    who += ')';
  }
  return who;
}

}  // namespace

std::string DescribeBar(const Bar& bar) {
  std::string name = bar.label.empty() ? "progress bar" : "'" + bar.label + "'";
  std::string where = std::to_string(bar.count);
  if (bar.total) {
    // Two appends: `"/" + std::string` trips GCC 12's false -Wrestrict (PR 105329).
    where += '/';
    where += std::to_string(*bar.total);
  }
  return name + " at " + where;
}

std::vector<Event> SlowBars(ProgressTracker& progress, const std::vector<rules::Rule>& pace_rules,
                            SteadyTime now) {
  std::vector<Event> events;
  for (std::size_t i = 0; i < pace_rules.size(); ++i) {
    const rules::Rule& rule = pace_rules[i];
    const auto& pace = std::get<rules::PaceDetector>(rule.detector);
    for (const PaceChange& change : progress.TakePaceChanges(i, pace, now)) {
      if (!change.slow) {
        continue;
      }
      Event event = EventOf(rule);
      event.line = change.bar->line;
      event.text = change.bar->text;
      event.summary = fmt::format(
          "{} is {:.1f}x slower over the last {}s: {:.0f} ms a step, against {:.0f} ms over the "
          "{}s before",
          DescribeBar(*change.bar), change.steps_before / change.steps_now,
          std::chrono::duration_cast<std::chrono::seconds>(pace.hold).count(),
          1000 / change.steps_now, 1000 / change.steps_before,
          std::chrono::duration_cast<std::chrono::seconds>(pace.baseline).count());
      events.push_back(std::move(event));
    }
  }
  return events;
}

std::vector<Event> StalledBars(ProgressTracker& progress,
                               const std::vector<rules::Rule>& progress_rules, SteadyTime now) {
  std::vector<Event> events;
  for (std::size_t i = 0; i < progress_rules.size(); ++i) {
    const rules::Rule& rule = progress_rules[i];
    const auto& detector = std::get<rules::ProgressDetector>(rule.detector);
    for (const StalledBar& stalled : progress.TakeStalled(i, detector, now)) {
      const Bar* bar = stalled.bar;
      Event event = EventOf(rule);
      event.line = bar->line;
      event.text = bar->text;
      event.summary = DescribeBar(*bar) +
                      (bar->advanced ? " has not advanced for " : " has not started for ") +
                      SecondsAgo(bar->last_advance, now);
      if (stalled.learned) {
        // What the job's own pace made of the threshold, for whoever tunes the rule.
        event.summary +=
            fmt::format(" (learnt: {:g} x its p99 interval {:.1f}s, at least {}s)", detector.factor,
                        std::chrono::duration<double>(*bar->IntervalP99()).count(),
                        std::chrono::duration_cast<std::chrono::seconds>(detector.min).count());
      }
      events.push_back(std::move(event));
    }
  }
  return events;
}

std::vector<Event> SilenceWatch::Check(const std::vector<rules::Rule>& silence_rules,
                                       const std::string& source_name, SteadyTime now) {
  std::vector<Event> events;
  for (const rules::Rule& rule : silence_rules) {
    const auto& silence = std::get<rules::SilenceDetector>(rule.detector);
    if (now - last_output_ < silence.after || reported_.count(rule.id) > 0) {
      continue;
    }
    reported_.insert(rule.id);
    Event event = EventOf(rule);
    event.text = "no output from source " + source_name + " for " + SecondsAgo(last_output_, now);
    event.summary = event.text;
    events.push_back(std::move(event));
  }
  return events;
}

std::optional<Event> WriterExited(ProgressTracker& progress, bool ends_mid_bar,
                                  const std::vector<source::WriterProcess>& gone, SteadyTime now) {
  progress.EndJob();
  const Bar* bar = progress.Latest();
  if (!ends_mid_bar || bar == nullptr || bar->complete ||
      now - bar->last_update > kWriterExitWindow) {
    return std::nullopt;
  }
  std::string who = DescribeWriters(gone);
  if (who.empty()) {
    who = "the log's last writer (closed it; no process holds it)";
  }
  Event event;
  event.rule_id = "writer.exited";
  event.kind = rules::RuleKind::kCrash;
  event.line = bar->line;
  event.text = bar->text;
  event.summary = "writer exited: " + who + " stopped with " + DescribeBar(*bar) +
                  " mid-line, without an error in the log (killed? OOM killer?)";
  return event;
}

std::optional<int> OomKilledPid(std::string_view kmsg_line) {
  constexpr std::string_view kKilled = "Killed process ";
  const std::size_t at = kmsg_line.find(kKilled);
  if (at == std::string_view::npos ||
      kmsg_line.substr(0, at).find("of memory") == std::string_view::npos) {  // "Out of", "out of"
    return std::nullopt;  // "Killed process" alone is also said of other kills
  }
  int pid = 0;
  std::size_t digits = 0;
  for (std::size_t i = at + kKilled.size();
       i < kmsg_line.size() && kmsg_line[i] >= '0' && kmsg_line[i] <= '9' && digits < 9;
       ++i, ++digits) {
    pid = pid * 10 + (kmsg_line[i] - '0');
  }
  return digits > 0 ? std::optional<int>(pid) : std::nullopt;
}

Event OomKilledWriter(ProgressTracker& progress, std::uint64_t last_line,
                      const std::vector<source::WriterProcess>& gone, std::string_view kmsg_line) {
  progress.EndJob();
  std::string who = DescribeWriters(gone);
  Event event;
  event.rule_id = "writer.exited";
  event.kind = rules::RuleKind::kCrash;
  const Bar* bar = progress.Latest();
  event.line = bar != nullptr ? bar->line : last_line;
  event.text = std::string(kmsg_line.substr(0, kMaxEventTextBytes));
  event.summary = "writer killed by the kernel's OOM killer: " + who;
  if (bar != nullptr) {
    event.summary += " stopped with ";
    event.summary += DescribeBar(*bar);
  }
  return event;
}

Event AsFollowUp(Event event, std::string_view what) {
  event.kind = rules::RuleKind::kWarning;
  std::string& summary = event.summary.empty() ? event.text : event.summary;
  summary += " (after the ";
  summary += what;
  summary += " already reported: the same failure)";
  return event;
}

std::string DescribeEnd(const source::ChildEnd& end) {
  return end.signal != 0 ? "was killed by signal " + std::to_string(end.signal) + " (" +
                               strsignal(end.signal) + ")"
                         : "exited with code " + std::to_string(end.exit_code);
}

std::vector<Event> ExitEvents(const std::vector<rules::Rule>& exit_rules,
                              const source::ChildEnd& end, const std::string& who) {
  std::vector<Event> events;
  for (const rules::Rule& rule : exit_rules) {
    const auto& exit = std::get<rules::ExitDetector>(rule.detector);
    auto listed = [](const auto& values, auto value) {
      return std::find(values.begin(), values.end(), value) != values.end();
    };
    const bool fires = end.signal != 0 ? exit.any_nonzero || listed(exit.signals, end.signal)
                                       : (exit.any_nonzero && end.exit_code != 0) ||
                                             listed(exit.codes, end.exit_code);
    if (!fires) {
      continue;
    }
    Event event = EventOf(rule);
    event.text = who + " " + DescribeEnd(end);
    event.summary = event.text;
    events.push_back(std::move(event));
  }
  return events;
}

}  // namespace trainwatch::detect
