#include "ops/incident_lifecycle.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "detect/time_detectors.h"

namespace trainwatch::ops {

std::string_view ResolvedByName(ResolvedBy by) {
  switch (by) {
    case ResolvedBy::kProgress:
      return "progress";
    case ResolvedBy::kRestart:
      return "restart";
    case ResolvedBy::kAck:
      return "ack";
    case ResolvedBy::kLine:
      return "line";
  }
  return "ack";
}

std::string StreamKey(std::string_view source, std::string_view stream) {
  std::string key;
  key.reserve(source.size() + 1 + stream.size());
  key.append(source).push_back('\n');  // no source name holds a newline
  key.append(stream);
  return key;
}

Resolution AckResolution(const std::string& id, const std::string& why, WallTime at,
                         WallTime opened) {
  return {id, ResolvedBy::kAck, "acknowledged by an operator" + (why.empty() ? "" : ": " + why),
          at, opened,           {},
          {}};
}

bool AddRuleText(OpenIncident& incident, const std::string& rule, const std::string& text) {
  std::size_t of_rule = 0;
  for (const auto& [kept_rule, kept_text] : incident.rule_texts) {
    if (kept_rule == rule && (++of_rule >= OpenIncident::kMaxTextsPerRule || kept_text == text)) {
      return false;  // kept already, or its rule's cap is reached
    }
  }
  incident.rule_texts.emplace_back(rule, text);
  return true;
}

bool FiredIn(const OpenIncident& incident, std::string_view rule, std::string_view source) {
  return std::find(incident.rules.begin(), incident.rules.end(), rule) != incident.rules.end() &&
         incident.sources.contains(source);
}

void IncidentLifecycle::Open(const detect::Incident& incident, SteadyTime now) {
  if (!incident.reason.empty() || incident.kind == rules::RuleKind::kWarning) {
    return;
  }
  OpenIncident open;
  open.id = incident.id;
  open.kind = incident.kind;
  open.rules = incident.rules;
  open.job_id = incident.job.id;
  open.opened_wall = incident.opened;
  open.opened = now;
  open.output_resumes = incident.kind == rules::RuleKind::kHang;
  for (const detect::Firing& firing : incident.firings) {
    if (firing.event.kind == rules::RuleKind::kHang && firing.resume_line != 0) {
      open.output_resumes = false;  // a line told of it
    }
    open.sources.insert(firing.source);
    open.streams.insert(StreamKey(firing.source, firing.stream));
    for (const source::WriterProcess& writer : firing.writers) {
      open.writers.insert(writer.pid);
    }
    open.writers.insert(firing.departed_writers.begin(), firing.departed_writers.end());
    AddRuleText(open, firing.event.rule_id, firing.event.text);
  }
  Restore(std::move(open));
}

void IncidentLifecycle::Restore(OpenIncident incident) {
  if (open_.size() >= kMaxOpen) {
    spdlog::warn(
        "{} incidents open: incident {} is no longer followed (it stays open in the log; "
        "`trainwatch incidents ack {}` resolves it)",
        open_.size(), open_.front().id, open_.front().id);
    open_.erase(open_.begin());
  }
  open_.push_back(std::move(incident));
}

bool IncidentLifecycle::IsOpen(std::string_view id) const {
  return std::any_of(open_.begin(), open_.end(),
                     [&](const OpenIncident& open) { return open.id == id; });
}

namespace {

// None of `now` wrote the stream when the incident fired (and something writes it now).
bool AllWritersNew(const std::vector<source::WriterProcess>* now, const std::set<int>& before) {
  if (now == nullptr || now->empty() || before.empty()) {
    return false;  // with no writer known then, no process is known to be new
  }
  return std::none_of(now->begin(), now->end(), [&](const source::WriterProcess& writer) {
    return before.contains(writer.pid);
  });
}

std::string DescribeWriter(const source::WriterProcess& writer) {
  return "pid " + std::to_string(writer.pid) +
         (writer.comm.empty() ? "" : " (" + writer.comm + ")");
}

}  // namespace

void IncidentLifecycle::Observe(const StreamActivity& activity, WallTime wall_now) {
  for (std::size_t i = open_.size(); i-- > 0;) {
    const OpenIncident& open = open_[i];
    const bool in_source = open.sources.contains(activity.source);
    if (!in_source && open.kind != rules::RuleKind::kDevice) {
      continue;
    }
    const bool own_stream =
        in_source && open.streams.contains(StreamKey(activity.source, activity.stream));
    const bool advanced = activity.latest_bar != nullptr && activity.last_advance > open.opened;
    if (open.kind == rules::RuleKind::kHang && own_stream &&
        (activity.latest_bar != nullptr
             ? advanced
             : open.output_resumes && activity.last_line > open.opened)) {
      Resolve(i, ResolvedBy::kProgress,
              "progress resumed on " + std::string(activity.stream) +
                  (advanced ? " (" + detect::DescribeBar(*activity.latest_bar) + ")"
                            : ": it writes again"),
              wall_now);
      continue;
    }
    // A slow incident ends when the stream moves on and nothing holds it slow: its bar
    // advanced, or the job's report (a spread rule's) came again and said the ranks are even.
    const bool reported_even = activity.last_even_report > open.opened;
    if (open.kind == rules::RuleKind::kSlow && own_stream && (advanced || reported_even) &&
        !activity.slow) {
      Resolve(i, ResolvedBy::kProgress,
              reported_even ? "the job's report on " + std::string(activity.stream) +
                                  " says its ranks are even again"
                            : "the pace came back on " + std::string(activity.stream) + " (" +
                                  detect::DescribeBar(*activity.latest_bar) + ")",
              wall_now);
      continue;
    }
    if (open.kind == rules::RuleKind::kDevice && activity.latest_bar != nullptr &&
        activity.last_advance > open.opened + kDeviceGrace) {
      Resolve(i, ResolvedBy::kProgress,
              "progress resumed on " + std::string(activity.stream) + " (" +
                  detect::DescribeBar(*activity.latest_bar) + "): the device serves the job again",
              wall_now);
      continue;
    }
    const bool new_file = in_source && !open.restored && activity.first_seen > open.opened;
    if ((own_stream || new_file) && AllWritersNew(activity.writers, open.writers)) {
      Resolve(i, ResolvedBy::kRestart,
              "the job restarted: " + std::string(activity.stream) + " is written by " +
                  DescribeWriter(activity.writers->front()) +
                  ", none of the processes that wrote it when the incident opened",
              wall_now);
    }
  }
}

void IncidentLifecycle::Resolve(std::size_t index, ResolvedBy by, std::string why,
                                WallTime wall_now) {
  OpenIncident& open = open_[index];
  resolved_.push_back({std::move(open.id), by, std::move(why), wall_now, open.opened_wall,
                       std::move(open.rules), std::move(open.job_id)});
  open_.erase(open_.begin() + static_cast<std::ptrdiff_t>(index));
}

bool IncidentLifecycle::Follows(std::string_view rule, std::string_view source) const {
  return std::any_of(open_.begin(), open_.end(),
                     [&](const OpenIncident& incident) { return FiredIn(incident, rule, source); });
}

std::vector<std::string> IncidentLifecycle::FiredAgain(std::string_view rule,
                                                       std::string_view source,
                                                       const std::string& text) {
  std::vector<std::string> kept;
  for (OpenIncident& incident : open_) {
    if (FiredIn(incident, rule, source) && AddRuleText(incident, std::string(rule), text)) {
      kept.push_back(incident.id);  // a new text, not past its cap: a record for each, no more
    }
  }
  return kept;
}

std::size_t IncidentLifecycle::ResolveByLine(
    std::string_view rule, std::string_view source,
    const std::function<bool(std::string_view text)>& same_failure, const std::string& why,
    WallTime wall_now) {
  std::size_t resolved = 0;
  for (std::size_t i = open_.size(); i-- > 0;) {
    OpenIncident& incident = open_[i];
    if (!FiredIn(incident, rule, source)) {
      continue;
    }
    // Each failure of `rule` it holds ends with its own line: two servers lost within one
    // settle time are one incident, resolved when both are back.
    const std::size_t before = incident.rule_texts.size();
    std::erase_if(incident.rule_texts, [&](const auto& fired) {
      return fired.first == rule && same_failure(fired.second);
    });
    const bool ended_one = incident.rule_texts.size() < before;
    const bool any_left = std::any_of(incident.rule_texts.begin(), incident.rule_texts.end(),
                                      [&](const auto& fired) { return fired.first == rule; });
    if (ended_one && !any_left) {
      Resolve(i, ResolvedBy::kLine, why, wall_now);
      ++resolved;
    }
  }
  return resolved;
}

std::vector<Resolution> IncidentLifecycle::TakeResolved() {
  std::vector<Resolution> taken;
  taken.swap(resolved_);
  return taken;
}

Resolution IncidentLifecycle::Ack(const std::string& id, const std::string& why,
                                  WallTime wall_now) {
  Resolution resolution = AckResolution(id, why, wall_now);
  for (std::size_t i = 0; i < open_.size(); ++i) {
    if (open_[i].id == id) {
      resolution.opened = open_[i].opened_wall;
      resolution.rules = std::move(open_[i].rules);
      resolution.job_id = std::move(open_[i].job_id);
      open_.erase(open_.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
  }
  return resolution;
}

}  // namespace trainwatch::ops
