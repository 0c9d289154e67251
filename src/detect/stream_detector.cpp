#include "detect/stream_detector.h"

#include <algorithm>

#include "detect/progress_parser.h"
#include "detect/refresh_head.h"

namespace trainwatch::detect {
namespace {

// `[rank3]:`, `[default3]:` (torchrun --tee), `[1,3]<stdout>:` (mpirun --tag-output): a line
// a launcher tagged with its rank. A timestamp in brackets is followed by a space, not these.
bool StartsWithWriterTag(std::string_view line) {
  if (line.empty() || line.front() != '[') {
    return false;
  }
  const std::size_t close = line.find(']');
  if (close == std::string_view::npos || close > 24 || close + 1 >= line.size() ||
      (line[close + 1] != ':' && line[close + 1] != '<')) {
    return false;
  }
  const std::string_view inside = line.substr(1, close - 1);
  return std::any_of(inside.begin(), inside.end(), [](char c) { return c >= '0' && c <= '9'; });
}

constexpr std::size_t kMaxContextLineBytes = 1024;
// Lines kept beyond the context: a traceback's event comes at its end, and its context is
// the lines before its header.
constexpr std::size_t kExtraRecentLines = 64;

std::string Capped(std::string_view text) {
  return std::string(text.substr(0, kMaxContextLineBytes));
}

}  // namespace

StreamDetector::StreamDetector(StreamIdentity identity,
                               std::unique_ptr<detect::LineDetector> detector,
                               std::size_t context_lines, bool track_progress, SteadyTime created)
    : identity_(std::move(identity)),
      detector_(std::move(detector)),
      context_lines_(context_lines),
      track_progress_(track_progress),
      created_(created),
      last_output_(created) {}

Result<std::unique_ptr<StreamDetector>> StreamDetector::Create(
    StreamIdentity identity, std::shared_ptr<const rules::CompiledRules> rules,
    std::size_t context_lines, bool track_progress, SteadyTime created) {
  Result<rules::LineMatcher> matcher = rules::LineMatcher::Create(std::move(rules));
  if (!matcher) {
    return matcher.error();
  }
  auto detector = std::make_unique<detect::LineDetector>(std::move(*matcher));
  return std::unique_ptr<StreamDetector>(new StreamDetector(
      std::move(identity), std::move(detector), context_lines, track_progress, created));
}

Status StreamDetector::SetRules(std::shared_ptr<const rules::CompiledRules> rules) {
  Result<rules::LineMatcher> matcher = rules::LineMatcher::Create(std::move(rules));
  if (!matcher) {
    return matcher.error();
  }
  // A traceback open under the old rules finishes under them: the swap waits for it.
  pending_matcher_.emplace(std::move(*matcher));
  SwapRulesWhenIdle();
  return Status::Ok();
}

void StreamDetector::SwapRulesWhenIdle() {
  if (pending_matcher_ && !detector_->AnyTracebackOpen()) {
    detector_ = std::make_unique<detect::LineDetector>(std::move(*pending_matcher_));
    pending_matcher_.reset();
  }
}

std::optional<std::uint64_t> StreamDetector::OffsetOf(std::uint64_t line) const {
  if (batch_ != nullptr && line >= batch_->first_line &&
      line - batch_->first_line < batch_->size()) {
    return batch_offset_ + batch_->Begin(line - batch_->first_line);
  }
  for (const Recent& recent : recent_) {
    if (recent.line == line) {
      return recent.offset;
    }
  }
  return std::nullopt;
}

std::vector<std::string> StreamDetector::ContextBefore(std::uint64_t line) const {
  std::vector<std::string> from_batch;
  std::uint64_t ring_limit = line;  // ring lines must be before this one
  if (batch_ != nullptr && line >= batch_->first_line &&
      line - batch_->first_line < batch_->size()) {
    const std::size_t index = line - batch_->first_line;
    const std::size_t take = std::min(context_lines_, index);
    for (std::size_t i = index - take; i < index; ++i) {
      from_batch.push_back(Capped(batch_->LastSegment(i)));
    }
    ring_limit = batch_->first_line;
  }
  std::vector<std::string> context;
  const std::size_t wanted = context_lines_ - from_batch.size();
  std::vector<const Recent*> before;
  for (auto it = recent_.rbegin(); it != recent_.rend() && before.size() < wanted; ++it) {
    if (it->line < ring_limit) {
      before.push_back(&*it);
    }
  }
  for (auto it = before.rbegin(); it != before.rend(); ++it) {
    context.push_back((*it)->text);
  }
  context.insert(context.end(), std::make_move_iterator(from_batch.begin()),
                 std::make_move_iterator(from_batch.end()));
  return context;
}

detect::Firing StreamDetector::MakeFiring(detect::Event event, detect::WallTime wall) const {
  detect::Firing firing;
  firing.context = ContextBefore(event.line == 0 ? last_line_ + 1 : event.line);
  firing.event = std::move(event);
  firing.source = identity_.source;
  firing.stream = identity_.name;
  firing.file_id = identity_.file_id;
  firing.file_owner = identity_.owner;
  firing.head_bytes = identity_.fingerprint.length;
  firing.head_hash = identity_.fingerprint.hash;
  firing.time = wall;
  firing.first_line_time = firing.event.line == 0 ? wall : ReadTimeOf(firing.event.line, wall);
  firing.writers = writers_;
  firing.departed_writers = departed_;
  return firing;
}

void StreamDetector::WritersDeparted(const std::vector<source::WriterProcess>& gone) {
  for (const source::WriterProcess& writer : gone) {
    departed_.push_back(writer.pid);
  }
  if (departed_.size() > kMaxDeparted) {
    departed_.erase(departed_.begin(), departed_.end() - static_cast<std::ptrdiff_t>(kMaxDeparted));
  }
}

void StreamDetector::Emit(std::vector<detect::Event>& events, detect::WallTime wall,
                          std::vector<detect::Firing>& out) {
  for (detect::Event& event : events) {
    if (event.line <= suppress_through_) {
      continue;  // fired before a restart; its incident is already written
    }
    if (event.kind == rules::RuleKind::kCrash) {
      crash_line_ = std::max({crash_line_, event.line, event.summary_line});
      crash_writer_ = writers_.size() == 1 ? writers_[0].pid : 0;
    } else if (event.kind == rules::RuleKind::kDevice) {
      device_line_ = std::max({device_line_, event.line, event.summary_line});
      device_at_ = last_output_;  // the batch's time
    }
    detect::Firing firing = MakeFiring(std::move(event), wall);
    if (std::optional<std::uint64_t> offset = OffsetOf(firing.event.line)) {
      firing.resume_offset = *offset;
      firing.resume_line = firing.event.line;
    } else if (traceback_hold_) {
      firing.resume_offset = traceback_hold_->offset;
      firing.resume_line = traceback_hold_->next_line;
    }
    out.push_back(std::move(firing));
  }
  events.clear();
}

void StreamDetector::HoldForIncident(const detect::Firing& firing) {
  if (firing.resume_line == 0) {
    return;
  }
  if (!incident_hold_ || firing.resume_offset < incident_hold_->offset) {
    incident_hold_ = source::TailPosition{firing.resume_offset, firing.resume_line};
  }
}

source::TailPosition StreamDetector::Durable(source::TailPosition read) const {
  source::TailPosition durable = read;
  for (const auto& hold : {traceback_hold_, incident_hold_}) {
    if (hold && hold->offset < durable.offset) {
      durable = *hold;
    }
  }
  return durable;
}

detect::WallTime StreamDetector::ReadTimeOf(std::uint64_t line, detect::WallTime wall) const {
  if (batch_ != nullptr && line >= batch_->first_line) {
    return wall;
  }
  for (const Recent& recent : recent_) {
    if (recent.line == line) {
      return recent.read;
    }
  }
  return traceback_hold_ && traceback_hold_->next_line <= line ? traceback_hold_read_ : wall;
}

void StreamDetector::Remember(const source::LineBatch& batch, std::uint64_t batch_offset,
                              detect::WallTime wall) {
  const std::size_t capacity = context_lines_ + kExtraRecentLines;
  const std::size_t first = batch.size() > capacity ? batch.size() - capacity : 0;
  for (std::size_t i = first; i < batch.size(); ++i) {
    recent_.push_back(
        {batch.LineNumber(i), batch_offset + batch.Begin(i), Capped(batch.LastSegment(i)), wall});
  }
  if (recent_.size() > capacity) {
    recent_.erase(recent_.begin(),
                  recent_.begin() + static_cast<std::ptrdiff_t>(recent_.size() - capacity));
  }
}

void StreamDetector::OnBatch(const source::LineBatch& batch, std::uint64_t batch_offset,
                             SteadyTime now, detect::WallTime wall,
                             std::vector<detect::Firing>& out) {
  batch_ = &batch;
  batch_offset_ = batch_offset;
  writer_closed_ = false;  // written since: someone holds it again
  bytes_ += batch.text.size();
  lines_ += batch.cut ? 0 : batch.size();
  last_output_ = now;
  detector_->OnBatch(batch, now, events_);
  // A firing line's own position is needed when it joins an incident (HoldForIncident), so
  // events are made while the batch is at hand.
  Emit(events_, wall, out);
  const std::uint64_t open_line = detector_->EarliestOpenLine();
  if (open_line == 0) {
    traceback_hold_.reset();
  } else if (!traceback_hold_) {
    if (std::optional<std::uint64_t> offset = OffsetOf(open_line)) {
      traceback_hold_ = source::TailPosition{*offset, open_line};
      traceback_hold_read_ = ReadTimeOf(open_line, wall);
    }
  }
  if (track_progress_) {
    for (std::size_t i = 0; i < batch.size(); ++i) {
      std::string_view record = batch.Record(i);
      if (batch.LineNumber(i) == pending_line_ && !batch.cut) {
        // Its refreshes up to here were parsed while it was unfinished (OnPending): parsing
        // them again would replay old counts as fresh advances.
        record.remove_prefix(std::min(record.size(), UnparsedFrom(record, '\n')));
        pending_line_ = 0;
        pending_parsed_ = 0;
      }
      saw_writer_tags_ = saw_writer_tags_ || StartsWithWriterTag(record);
      ParseProgress(record, '\n', batch.LineNumber(i), now);
    }
  }
  if (!batch.cut || batch.size() > 0) {
    last_line_ = batch.LineNumber(batch.size() - 1);
  }
  Remember(batch, batch_offset, wall);
  batch_ = nullptr;
  SwapRulesWhenIdle();
}

bool StreamDetector::EndsMidBar() const {
  const Bar* bar = progress_.Latest();
  return pending_line_ != 0 && pending_line_ > last_line_ && bar != nullptr &&
         bar->line == pending_line_;
}

void StreamDetector::ParseProgress(std::string_view record, char separator, std::uint64_t line,
                                   SteadyTime now) {
  const auto parse = [&](std::string_view segment) {
    if (std::optional<detect::ProgressUpdate> update = detect::ParseProgress(segment)) {
      progress_.OnUpdate(*update, line, segment, now);
    } else if (detect::IsPhaseMarker(segment)) {
      progress_.OnPhase(now);
    }
  };
  if (record.find(separator) == std::string_view::npos) {
    parse(record);  // one segment, as most lines are
    return;
  }
  // The segments of one record come at one moment: of a run of refreshes of one bar, only the
  // last is parsed (detect/refresh_head.h), the rest would only restate counts passed at the
  // same instant.
  std::optional<std::string_view> held;  // the segment before, not parsed yet
  std::optional<detect::RefreshHead> held_head;
  bool held_went_back = false;  // its bar dropped from the segment before it: a restart
  std::size_t start = 0;
  while (start <= record.size()) {
    std::size_t stop = record.find(separator, start);
    if (stop == std::string_view::npos) {
      stop = record.size();
    }
    const std::string_view segment = record.substr(start, stop - start);
    std::optional<detect::RefreshHead> head = detect::HeadOfRefresh(segment);
    const bool went_back = held_head && head && head->percent < held_head->percent &&
                           detect::SameBar(*head, *held_head);
    if (held && (held_went_back || !(held_head && head && detect::Supersedes(*head, *held_head)))) {
      parse(*held);
    }
    held = segment;
    held_head = head;
    held_went_back = went_back;
    start = stop + 1;
  }
  if (held) {
    parse(*held);
  }
}

void StreamDetector::OnPending(std::string_view text, std::uint64_t line, SteadyTime now) {
  last_output_ = now;
  writer_closed_ = false;
  if (!track_progress_) {
    return;
  }
  if (line != pending_line_ || text.size() < pending_parsed_) {
    pending_line_ = line;
    pending_parsed_ = 0;
  }
  if (text.size() == pending_parsed_) {
    return;
  }
  // Only the refreshes that came since the last call: a bar line grows by one refresh at a
  // time, and parsing all of it each time would cost the square of its length.
  ParseProgress(text.substr(UnparsedFrom(text, '\r')), '\r', line, now);
  pending_parsed_ = text.size();
}

std::size_t StreamDetector::UnparsedFrom(std::string_view text, char separator) const {
  // The segment that was still being written at the last parse is parsed again, whole.
  if (pending_parsed_ == 0 || text.empty()) {
    return 0;
  }
  const std::size_t last = text.rfind(separator, std::min(text.size(), pending_parsed_) - 1);
  return last == std::string_view::npos ? 0 : last + 1;
}

void StreamDetector::CloseLastWords(detect::WallTime wall, std::vector<detect::Firing>& out) {
  if (!detector_->AnyLastWordsPending()) {
    return;
  }
  events_.clear();
  detector_->FinishLastWords(events_);
  Emit(events_, wall, out);
}

void StreamDetector::CloseTracebacks(detect::WallTime wall, std::vector<detect::Firing>& out) {
  detector_->Finish(events_);
  Emit(events_, wall, out);
  traceback_hold_.reset();
  SwapRulesWhenIdle();
}

}  // namespace trainwatch::detect
