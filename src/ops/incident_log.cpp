#include "ops/incident_log.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <type_traits>

#include "capture/capture_types.h"
#include "core/atomic_file.h"
#include "core/time_format.h"
#include "core/unique_fd.h"
#include "detect/incident_json.h"
#include "diagnose/suspects_json.h"

namespace trainwatch::ops {

using json = nlohmann::ordered_json;

Status IncidentLog::Append(const detect::Incident& incident) {
  return AppendLine(detect::IncidentJson(incident));
}

Status IncidentLog::AppendBundle(const capture::CaptureOutcome& outcome) {
  json record = {{"bundle_for", outcome.incident_id},
                 {"bundle", outcome.path.empty() ? json(nullptr) : json(outcome.path)},
                 {"bytes", outcome.bytes},
                 {"reduced", outcome.reduced},
                 {"capture_seconds", outcome.capture_seconds},
                 {"firing_to_bundle_seconds", outcome.since_first_firing}};
  if (outcome.early_since_first_firing > 0) {
    record["firing_to_early_bundle_seconds"] = outcome.early_since_first_firing;
  }
  if (!outcome.error.empty()) {
    record["error"] = outcome.error;
  }
  if (!outcome.timed_out.empty()) {
    record["timed_out"] = outcome.timed_out;
  }
  if (!outcome.ranks_summary.empty()) {
    record["ranks"] = outcome.ranks_summary;
    record["suspects"] = diagnose::SuspectsJson(outcome.suspects, outcome.host);
    if (outcome.stacks_say) {
      record["stacks_say"] = diagnose::StackVerdictJson(*outcome.stacks_say);
    }
    if (!outcome.roster.empty()) {
      record["roster"] = outcome.roster;
    }
  }
  if (!outcome.devices_note.empty()) {
    record["devices"] = outcome.devices_note;
  }
  return AppendLine(record.dump(-1, ' ', false, json::error_handler_t::replace));
}

std::string ResolutionJson(const Resolution& resolution) {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  json record = {{"resolved", resolution.id},
                 {"how", ResolvedByName(resolution.by)},
                 {"why", resolution.why},
                 {"at", FormatUtc(resolution.at)},
                 {"at_ms", duration_cast<milliseconds>(resolution.at.time_since_epoch()).count()}};
  if (resolution.opened != WallTime{}) {
    // Milliseconds, as seconds: "95.25", not the float noise of a nanosecond difference.
    const auto open_ms = duration_cast<milliseconds>(resolution.at - resolution.opened);
    record["open_seconds"] = std::chrono::duration<double>(open_ms).count();
  }
  return record.dump(-1, ' ', false, json::error_handler_t::replace);
}

Status IncidentLog::AppendFollowUp(const std::string& id, const detect::Firing& firing,
                                   const std::string& why) {
  return AppendLine(detect::FollowUpJson(id, firing, why));
}

Status IncidentLog::AppendResolved(const Resolution& resolution) {
  return AppendLine(ResolutionJson(resolution));
}

namespace {

bool ReadsOneByte(const ReadableFile& file, std::uint64_t offset, char& byte) {
  Result<std::size_t> n = file.ReadAt(offset, {&byte, 1});
  return n && *n == 1;
}

}  // namespace

Status IncidentLog::AppendSchedulerAction(const SchedulerAction& action) {
  return AppendLine(SchedulerActionJson(action));
}

Status IncidentLog::AppendLine(const std::string& text) {
  if (unwritten_.size() >= kMaxUnwritten) {
    unwritten_.pop_front();
    ++lost_;
  }
  unwritten_.push_back(text + "\n");
  return Flush();
}

Status IncidentLog::Flush() {
  if (unwritten_.empty()) {
    return Status::Ok();
  }
  Result<std::unique_ptr<AppendableFile>> file = fs_.OpenForAppend(path_, 0600);
  if (!file) {
    return Unwritten(file.error().message);
  }
  Result<FileStatus> status = (*file)->Status();
  std::uint64_t size = status ? status->size : 0;
  while (!unwritten_.empty()) {
    std::string line = unwritten_.front();
    // A torn last line (a short write on a full disk) must not swallow this record too: it
    // stays a line of its own, which no reader takes for a record.
    char last = '\n';
    if (size > 0 && ReadsOneByte(**file, size - 1, last) && last != '\n') {
      line.insert(0, 1, '\n');
    }
    // One write of the whole line: O_APPEND keeps a reader from ever seeing half of it
    // interleaved with another writer's.
    if (Status written = (*file)->Append(line); !written) {
      return Unwritten(written.error().message);
    }
    unwritten_.pop_front();
    size += line.size();
  }
  if (lost_ > lost_said_) {
    spdlog::error(
        "{}: written again, but the {} oldest records that waited for it are lost (at "
        "most {} wait)",
        path_, lost_ - lost_said_, kMaxUnwritten);
    lost_said_ = lost_;
  }
  return size > kMaxBytes ? Trim(**file, size) : Status::Ok();
}

Status IncidentLog::Unwritten(const std::string& why) const {
  return Error{why + "; " + std::to_string(unwritten_.size()) +
               (unwritten_.size() == 1 ? " record waits" : " records wait") +
               " in memory until the next record is written"};
}

Status IncidentLog::Trim(const ReadableFile& file, std::uint64_t size) {
  std::string tail(kTailBytes, '\0');
  Result<std::size_t> n = file.ReadAt(size - kTailBytes, tail);
  if (!n || *n != tail.size()) {
    return Error{path_ + ": cannot read it back to trim it"};
  }
  const std::size_t first_line = tail.find('\n');
  tail.erase(0, first_line == std::string::npos ? tail.size() : first_line + 1);
  // Loop thread only, so no append can land between the read and the rename.
  return fs_.ReplaceWhole(path_, tail, 0600);
}

Result<std::string> IncidentLog::ReadTail() const {
  Result<std::unique_ptr<ReadableFile>> file = fs_.OpenForReading(path_);
  if (!file) {
    if (!fs_.Stat(path_)) {
      return std::string();  // none yet
    }
    return file.error();
  }
  Result<FileStatus> status = (*file)->Status();
  const std::uint64_t size = status ? status->size : 0;
  const std::uint64_t start = size > kTailBytes ? size - kTailBytes : 0;
  std::string text(size - start, '\0');
  Result<std::size_t> n = (*file)->ReadAt(start, text);
  text.resize(n ? *n : 0);
  char before = '\n';
  if (start > 0 && (!ReadsOneByte(**file, start - 1, before) || before != '\n')) {
    // The tail begins mid-line: skip to the next whole one.
    const std::size_t line = text.find('\n');
    text.erase(0, line == std::string::npos ? text.size() : line + 1);
  }
  return text;
}

Result<IncidentHistory> IncidentLog::ReadHistory() const {
  Result<std::string> text = ReadTail();
  if (!text) {
    return text.error();
  }
  return ParseIncidentHistory(*text);
}

void ForEachRecord(std::string_view text, const std::function<void(const json& record)>& visit) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) {
      break;  // an unfinished last line (a crash mid-append): ignore it
    }
    const json record = json::parse(text.begin() + static_cast<std::ptrdiff_t>(pos),
                                    text.begin() + static_cast<std::ptrdiff_t>(end), nullptr,
                                    /*allow_exceptions=*/false);
    pos = end + 1;
    if (record.is_object()) {
      visit(record);
    }
  }
}

namespace {

// record[key] when it holds a number of type T, else `fallback`: json::value throws on a field
// of another type, and a hand-edited or damaged log must not stop the daemon from starting.
template <typename T>
T NumberOr(const json& record, const char* key, T fallback) {
  const auto it = record.find(key);
  if (it == record.end() || !it->is_number_integer() ||
      (std::is_unsigned_v<T> && !it->is_number_unsigned() && it->template get<long long>() < 0)) {
    return fallback;
  }
  return it->template get<T>();
}

// When an incident opened: milliseconds that fit the clock (a WallTime counts nanoseconds,
// so a wild "opened_ms" would overflow it), else the epoch (cooldowns long past).
detect::WallTime OpenedAt(const json& record) {
  using std::chrono::milliseconds;
  const long long limit =
      std::chrono::duration_cast<milliseconds>(detect::WallTime::duration::max()).count();
  const long long ms = NumberOr(record, "opened_ms", 0LL);
  return detect::WallTime{milliseconds(ms > -limit && ms < limit ? ms : 0)};
}

std::string StringOr(const json& record, const char* key) {
  const auto it = record.find(key);
  return it != record.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// An incident record: open until its resolution record comes (manual snapshots and peer
// captures never are).
void RestoreOpen(IncidentHistory& history, const json& record, detect::WallTime opened) {
  const std::optional<rules::RuleKind> kind = rules::ParseRuleKind(StringOr(record, "kind"));
  const std::string id = StringOr(record, "id");
  if (!kind || id.empty() || *kind == rules::RuleKind::kWarning) {
    return;  // "manual", "peer", warnings alone (never open), or damaged
  }
  OpenIncident open;
  open.id = id;
  open.kind = *kind;
  open.opened_wall = opened;
  open.restored = true;
  if (const auto job = record.find("job"); job != record.end() && job->is_object()) {
    open.job_id = StringOr(*job, "id");
  }
  for (const auto& rule : record.value("rules", json::array())) {
    if (rule.is_string()) {
      open.rules.push_back(rule.get<std::string>());
    }
  }
  for (const auto& firing : record.value("firings", json::array())) {
    if (!firing.is_object()) {
      continue;
    }
    const std::string source = StringOr(firing, "source");
    open.sources.insert(source);
    AddRuleText(open, StringOr(firing, "rule"), StringOr(firing, "text"));
    open.streams.insert(StreamKey(source, StringOr(firing, "stream")));
    for (const auto& writer : firing.value("writers", json::array())) {
      if (writer.is_object() && NumberOr(writer, "pid", 0) > 0) {
        open.writers.insert(NumberOr(writer, "pid", 0));
      }
    }
    for (const auto& pid : firing.value("departed_writers", json::array())) {
      if (pid.is_number_integer() && pid.get<long long>() > 0 &&
          pid.get<long long>() <= std::numeric_limits<int>::max()) {
        open.writers.insert(pid.get<int>());
      }
    }
  }
  // Bounded like the daemon's own list: the oldest are forgotten.
  if (history.open.size() >= IncidentLifecycle::kMaxOpen) {
    history.open.erase(history.open.begin());
  }
  history.open.push_back(std::move(open));
}

// A resolution record: its incident is no longer open, and its rules' cooldown ended with it.
void Resolved(IncidentHistory& history, const std::string& id) {
  const auto it = std::find_if(history.open.begin(), history.open.end(),
                               [&](const OpenIncident& open) { return open.id == id; });
  if (it == history.open.end()) {
    return;
  }
  for (const std::string& rule : it->rules) {
    if (const auto last = history.rule_last_opened.find(rule);
        last != history.rule_last_opened.end() && last->second <= it->opened_wall) {
      history.rule_last_opened.erase(last);
    }
  }
  history.open.erase(it);
}

// A follow-up record (a firing of one of an open incident's rules that opened nothing: it
// followed the incident up, or its rule was cooling down): the incident keeps its text, as
// IncidentLifecycle::FiredAgain did, so that a resolving line after a restart still waits
// for each failure's own end (the second NFS server's OK too).
void FollowedUp(IncidentHistory& history, const json& record) {
  const std::string id = StringOr(record, "follow_up_for");
  const auto it = std::find_if(history.open.begin(), history.open.end(),
                               [&](const OpenIncident& open) { return open.id == id; });
  if (it == history.open.end()) {
    return;
  }
  const std::string rule = StringOr(record, "rule");
  if (FiredIn(*it, rule, StringOr(record, "source"))) {
    AddRuleText(*it, rule,
                record.contains("text") ? StringOr(record, "text") : StringOr(record, "summary"));
  }
}

}  // namespace

IncidentHistory ParseIncidentHistory(std::string_view text) {
  IncidentHistory history;
  ForEachRecord(text, [&](const json& record) {
    if (const auto resolved = record.find("resolved"); resolved != record.end()) {
      if (resolved->is_string()) {
        Resolved(history, resolved->get<std::string>());
      }
      return;
    }
    if (record.contains("follow_up_for")) {
      FollowedUp(history, record);
      return;
    }
    if (!record.contains("firings")) {
      return;  // not an incident (a bundle record)
    }
    ++history.incidents;
    const detect::WallTime opened = OpenedAt(record);
    RestoreOpen(history, record, opened);
    if (const std::string kind = StringOr(record, "kind"); kind != "manual" && kind != "warning") {
      if (const auto job = record.find("job"); job != record.end() && job->is_object()) {
        if (const std::string id = StringOr(*job, "id"); !id.empty()) {
          auto& last = history.job_last_captured[id];
          last = std::max(last, opened);
        }
      }
    }
    if (std::optional<AttemptEntry> attempt = AttemptEntryOf(record)) {
      history.attempts.push_back(std::move(*attempt));
    }
    if (const auto fingerprint = record.find("fingerprint");
        fingerprint != record.end() && fingerprint->is_string()) {
      FingerprintSeen& seen = history.fingerprints[fingerprint->get<std::string>()];
      seen.first = seen.count == 0 ? opened : std::min(seen.first, opened);
      seen.last = std::max(seen.last, opened);
      ++seen.count;
    }
    for (const auto& rule : record.value("rules", json::array())) {
      if (rule.is_string()) {
        auto& last = history.rule_last_opened[rule.get<std::string>()];
        last = std::max(last, opened);
      }
    }
    for (const auto& firing : record.value("firings", json::array())) {
      if (!firing.is_object() || !firing.contains("file_id") || !firing["file_id"].is_string()) {
        continue;
      }
      FiredThrough fired{
          NumberOr(firing, "head_bytes", 0U), NumberOr(firing, "head_hash", 0ULL),
          std::max(NumberOr(firing, "line", 0ULL), NumberOr(firing, "summary_line", 0ULL))};
      const std::string id = firing["file_id"].get<std::string>();
      bool merged = false;
      auto [begin, stop] = history.fired.equal_range(id);
      for (auto it = begin; it != stop; ++it) {
        if (it->second.head_bytes == fired.head_bytes && it->second.head_hash == fired.head_hash) {
          it->second.line = std::max(it->second.line, fired.line);
          merged = true;
        }
      }
      if (!merged) {
        history.fired.emplace(id, fired);
      }
    }
  });
  return history;
}

}  // namespace trainwatch::ops
