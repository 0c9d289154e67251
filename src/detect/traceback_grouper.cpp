#include "detect/traceback_grouper.h"

#include <algorithm>

#include "core/text_trim.h"
#include "detect/traceback_lines.h"

namespace trainwatch::detect {
namespace {

constexpr std::string_view kDuringHandling =
    "During handling of the above exception, another exception occurred:";
constexpr std::string_view kDirectCause =
    "The above exception was the direct cause of the following exception:";

// Lines under a traceback's prefix that fit no traceback grammar (another thread's output)
// before the traceback is given up as cut off.
constexpr int kMaxNoise = 30;
// Lines with none of its own before a traceback is given up: the log moved on.
constexpr std::uint64_t kMaxGap = 500;
// Lines of other writers after a traceback's exception line before it is over. A rank's
// traceback ends at its exception (or goes on with "During handling...", which comes right
// after it); waiting for a line of its own instead held it open while the other ranks wrote
// on, until the whole file fell quiet or 500 lines passed: a second incident after `settle`,
// or one held up to the collective watchdog's time.
constexpr std::uint64_t kOthersAfterException = 8;

}  // namespace

std::optional<std::size_t> TracebackGrouper::PrefixLength(const Open& open, std::string_view text,
                                                          PrefixMode mode) {
  switch (mode) {
    case PrefixMode::kExact:
      if (text.starts_with(open.prefix)) {
        return open.prefix.size();
      }
      return std::nullopt;
    case PrefixMode::kClock:
      if (HasClock(open.prefix)) {
        return ClockPrefixLength(open.prefix, text);
      }
      return std::nullopt;
    case PrefixMode::kLearned: {
      // The first frame line shows the real prefix of a header that was glued to other
      // output ("[rank0]:   0%|...]Traceback ..." then "[rank0]:   File ...").
      const std::size_t frame = text.find("  File \"");
      if (frame == std::string_view::npos) {
        return std::nullopt;
      }
      return frame;
    }
    case PrefixMode::kUnknown:
      break;
  }
  return std::nullopt;
}

bool TracebackGrouper::SameWriter(const Open& open, std::string_view prefix) {
  if (open.mode == PrefixMode::kClock) {
    return ClockPrefixLength(open.prefix, prefix) == prefix.size();
  }
  return open.prefix == prefix;
}

void TracebackGrouper::OpenHeader(std::uint64_t line, std::string_view text, std::size_t header_at,
                                  std::span<const std::string_view> before,
                                  std::vector<Traceback>& out) {
  const std::string_view prefix = text.substr(0, header_at);
  // Python 3.11 exception groups print their sub-tracebacks, and nested groups, inside the
  // group's box ("    | Traceback ...", "    | + Exception Group Traceback ..."): they belong
  // to the open group of the same writer, whose summary ("ExceptionGroup: ... (2
  // sub-exceptions)") says it all.
  std::string_view box = TrimRight(prefix, kWhiteSpace);
  if (box.ends_with("Exception Group")) {
    box = TrimRight(box.substr(0, box.size() - std::string_view("Exception Group").size()),
                    kWhiteSpace);
    if (box.ends_with("+")) {
      box = TrimRight(box.substr(0, box.size() - 1), kWhiteSpace);
    }
  }
  if (box.ends_with("|")) {
    for (Open& open : open_) {
      if (open.group && box.starts_with(open.group_writer) &&
          box.substr(open.group_writer.size()).find_first_not_of(" |+") == std::string_view::npos) {
        open.last_line = line;
        return;
      }
    }
  }
  for (std::size_t i = open_.size(); i-- > 0;) {
    Open& open = open_[i];
    if (!SameWriter(open, prefix)) {
      continue;
    }
    if (open.state == State::kChain) {
      // "During handling of the above exception..." then a new header: the same traceback
      // goes on, and its final exception becomes the summary.
      open.state = State::kFrames;
      open.noise = 0;
      open.last_line = line;
      return;
    }
    Close(i, out);  // the same writer started another traceback: the old one is over
    break;
  }
  Open open;
  open.traceback.header_line = line;
  open.traceback.header_text = std::string(text);
  open.prefix = std::string(prefix);
  if (std::string_view group = TrimRight(prefix, kWhiteSpace); group.ends_with("Exception Group")) {
    group = TrimRight(group.substr(0, group.size() - std::string_view("Exception Group").size()),
                      kWhiteSpace);
    if (group.ends_with("+")) {
      open.group = true;
      open.group_writer = std::string(TrimRight(group.substr(0, group.size() - 1), kWhiteSpace));
    }
  }
  if (IsFrameLine(prefix) && !open_.empty()) {
    // Glued into another traceback's frames: part of the same burst, and as survivable.
    open.traceback.survived = open_.back().traceback.survived;
  }
  // Only the same writer's lines count ("[rank1]: Exception ignored in" says nothing about
  // rank 0); with no writer tag (a bare or glued header) writers cannot be told apart.
  const std::string_view writer = WriterTag(prefix);
  for (std::string_view earlier : before) {
    if (open.traceback.survived) {
      break;
    }
    std::optional<std::size_t> own = std::size_t{0};
    if (!writer.empty()) {
      own = earlier.starts_with(writer)
                ? std::optional(writer.size())
                : (HasClock(writer) ? ClockPrefixLength(writer, earlier) : std::nullopt);
    }
    if (!own) {
      continue;
    }
    const std::string_view body = TrimLeft(earlier.substr(*own), " \t");
    if (HasSurvivedMarker(body)) {
      open.traceback.survived = true;
    } else if (IsExceptionLine(TrimRight(body, kWhiteSpace))) {
      break;  // the end of an earlier traceback: a marker above it is not this one's
    }
  }
  open.last_line = line;
  if (open_.size() >= kMaxOpen) {
    Close(0, out);
  }
  open_.push_back(std::move(open));
}

TracebackGrouper::Step TracebackGrouper::Advance(Open& open, std::uint64_t line,
                                                 std::string_view body) {
  body = TrimRight(body, kWhiteSpace);
  switch (open.state) {
    case State::kFrames:
      if (!body.empty() && (body.front() == ' ' || body.front() == '\t')) {
        open.last_line = line;  // a frame, its source line, a caret line, "[Previous line ...]"
        if (const std::string_view frame = TrimLeft(body, " \t"); frame.starts_with("File \"")) {
          open.traceback.innermost_frame = std::string(frame.substr(0, kMaxFrameBytes));
        }
        return Step::kBelongs;
      }
      if (IsExceptionLine(body)) {
        open.traceback.summary = std::string(body);
        open.traceback.summary_line = line;
        open.state = State::kAfterException;
        open.blanks = 0;
        open.last_line = line;
        return Step::kBelongs;
      }
      if (open.headerless) {
        return Step::kEnded;  // without a header, only frames running into their exception count
      }
      ++open.noise;  // interleaved output of another thread or process
      return open.noise <= kMaxNoise ? Step::kTolerated : Step::kEnded;
    case State::kAfterException:
      if (body.empty()) {
        return ++open.blanks <= 2 ? Step::kTolerated : Step::kEnded;
      }
      if (body == kDuringHandling || body == kDirectCause) {
        open.state = State::kChain;
        open.last_line = line;
        return Step::kBelongs;
      }
      return Step::kEnded;  // the exception's message continues, or the log moved on
    case State::kChain:
      return body.empty() && ++open.blanks <= 4 ? Step::kTolerated : Step::kEnded;
  }
  return Step::kEnded;
}

void TracebackGrouper::OnLine(std::uint64_t line, std::string_view text,
                              std::optional<std::size_t> header_at,
                              std::span<const std::string_view> before,
                              std::vector<Traceback>& out) {
  for (std::size_t i = open_.size(); i-- > 0;) {
    const std::uint64_t since = line - open_[i].last_line;
    if (since > kMaxGap ||
        (open_[i].state == State::kAfterException && since > kOthersAfterException)) {
      Close(i, out);
    }
  }
  if (!header_at) {
    Route(line, text, out);
    return;
  }
  const std::string_view rest = text.substr(*header_at);
  if (rest.starts_with("File \"")) {
    OnHeaderlessFrame(line, text, *header_at, out);
  } else if (IsExceptionAt(rest)) {
    OnLoneException(line, text, *header_at, out);
  } else {
    OpenHeader(line, text, *header_at, before, out);
  }
}

void TracebackGrouper::OnHeaderlessFrame(std::uint64_t line, std::string_view text, std::size_t at,
                                         std::vector<Traceback>& out) {
  if (Route(line, text, out)) {
    return;  // a frame of an open traceback, the usual case
  }
  // Python indents a frame by two spaces; what comes before them is the writer's prefix.
  if (at < 2 || text.substr(at - 2, 2) != "  ") {
    return;
  }
  // Frames inside an open exception group's box ("    |   File ...") are the group's.
  if (TrimRight(text.substr(0, at), kWhiteSpace).ends_with("|") &&
      std::any_of(open_.begin(), open_.end(), [](const Open& open) { return open.group; })) {
    return;
  }
  Open open;
  open.traceback.header_line = line;
  open.traceback.header_text = std::string(text);
  open.prefix = std::string(text.substr(0, at - 2));
  open.mode = HasClock(open.prefix) ? PrefixMode::kClock : PrefixMode::kExact;
  open.headerless = true;
  open.traceback.innermost_frame =
      std::string(TrimRight(text.substr(at), kWhiteSpace).substr(0, kMaxFrameBytes));
  open.last_line = line;
  if (open_.size() >= kMaxOpen) {
    Close(0, out);
  }
  open_.push_back(std::move(open));
}

void TracebackGrouper::OnLoneException(std::uint64_t line, std::string_view text, std::size_t at,
                                       std::vector<Traceback>& out) {
  if (Route(line, text, out)) {
    return;  // the final line of an open traceback
  }
  const std::string_view body = TrimRight(text.substr(at), kWhiteSpace);
  if (!IsWriterPrefix(text.substr(0, at)) || !IsExceptionLine(body)) {
    return;
  }
  Traceback traceback;
  traceback.header_line = line;
  traceback.header_text = std::string(text);
  traceback.summary = std::string(body);
  traceback.summary_line = line;
  out.push_back(std::move(traceback));
}

bool TracebackGrouper::Route(std::uint64_t line, std::string_view text,
                             std::vector<Traceback>& out) {
  // Pick the traceback this line belongs to: an exact prefix beats a clock-shaped one beats
  // a prefix learned from a first frame line; among equals, the newest.
  while (!open_.empty()) {
    std::size_t best = open_.size();
    PrefixMode best_mode = PrefixMode::kUnknown;
    std::size_t best_length = 0;
    for (std::size_t i = 0; i < open_.size(); ++i) {
      const Open& open = open_[i];
      for (PrefixMode mode : {PrefixMode::kExact, PrefixMode::kClock, PrefixMode::kLearned}) {
        if (open.mode != PrefixMode::kUnknown && open.mode != mode) {
          continue;
        }
        const auto length = PrefixLength(open, text, mode);
        if (!length) {
          continue;
        }
        // A lower mode wins; within a mode the longest prefix ("[rank0]: " over a bare
        // header's ""), then the newest.
        if (best == open_.size() || mode < best_mode ||
            (mode == best_mode && *length >= best_length)) {
          best = i;
          best_mode = mode;
          best_length = *length;
        }
        break;
      }
    }
    if (best == open_.size()) {
      return false;
    }
    Open& open = open_[best];
    const Step step = Advance(open, line, text.substr(best_length));
    if (step == Step::kBelongs && open.mode == PrefixMode::kUnknown) {
      // Only a real traceback line settles how its prefix looks.
      if (best_mode == PrefixMode::kLearned) {
        open.prefix = std::string(text.substr(0, best_length));
        best_mode = PrefixMode::kExact;
      }
      if (best_mode == PrefixMode::kExact && HasClock(open.prefix)) {
        best_mode = PrefixMode::kClock;  // the first frame was in the same second
      }
      open.mode = best_mode;
    }
    if (step != Step::kEnded) {
      return step == Step::kBelongs;
    }
    Close(best, out);  // ended: the line may still belong to another traceback
  }
  return false;
}

void TracebackGrouper::Close(std::size_t index, std::vector<Traceback>& out) {
  Open& open = open_[index];
  // Frames with no header and no exception are a printed stack (traceback.print_stack(),
  // logging's stack_info), not a failure.
  if (!open.headerless || !open.traceback.summary.empty()) {
    out.push_back(std::move(open.traceback));
  }
  open_.erase(open_.begin() + static_cast<std::ptrdiff_t>(index));
}

void TracebackGrouper::CloseAll(std::vector<Traceback>& out) {
  while (!open_.empty()) {
    Close(0, out);
  }
}

bool TracebackGrouper::AwaitingException() const {
  return std::any_of(open_.begin(), open_.end(),
                     [](const Open& open) { return open.state == State::kFrames; });
}

std::uint64_t TracebackGrouper::EarliestOpenLine() const {
  std::uint64_t earliest = 0;
  for (const Open& open : open_) {
    if (earliest == 0 || open.traceback.header_line < earliest) {
      earliest = open.traceback.header_line;
    }
  }
  return earliest;
}

}  // namespace trainwatch::detect
