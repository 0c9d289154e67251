#include "detect/traceback_grouper.h"

#include <cctype>

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

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Digits may differ, so "[80746] " and "2024-02-21T05:55:25.318312Z " prefixes that count
// or tick from line to line still belong together.
bool SameShape(std::string_view prefix, std::string_view text) {
  if (text.size() < prefix.size()) {
    return false;
  }
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (prefix[i] != text[i] && !(IsDigit(prefix[i]) && IsDigit(text[i]))) {
      return false;
    }
  }
  return true;
}

std::string_view TrimRight(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

// "RuntimeError: ...", "KeyboardInterrupt", "torch.cuda.OutOfMemoryError: ...". The last
// dotted part is a class name (starts upper case), and a name with no lower case letter is
// a log level ("WARNING:torch..."), not an exception.
bool IsExceptionLine(std::string_view body) {
  std::size_t i = 0;
  bool lower_seen = false;
  bool part_start_upper = false;
  while (true) {
    if (i >= body.size() ||
        !(std::isalpha(static_cast<unsigned char>(body[i])) || body[i] == '_')) {
      return false;
    }
    part_start_upper = std::isupper(static_cast<unsigned char>(body[i])) != 0;
    while (i < body.size() &&
           (std::isalnum(static_cast<unsigned char>(body[i])) || body[i] == '_')) {
      lower_seen = lower_seen || std::islower(static_cast<unsigned char>(body[i]));
      ++i;
    }
    if (i < body.size() && body[i] == '.') {
      ++i;
      continue;
    }
    break;
  }
  if (!part_start_upper || !lower_seen) {
    return false;
  }
  if (i == body.size()) {
    return true;
  }
  return body[i] == ':' && (i + 1 == body.size() || body[i + 1] == ' ');
}

// Python prints these before a traceback it survives. They may be glued to a progress bar
// ("2.16it/s]Exception ignored in: ...") or sit a line or two above the header when several
// DataLoader workers print at once, so they are searched for anywhere in the line.
bool HasSurvivedMarker(std::string_view line) {
  line = TrimRight(line);
  for (std::string_view marker :
       {"Exception ignored in", "Exception in thread ",
        "Unhandled exception in thread started by",                     // Python 2
        "Error in atexit._run_exitfuncs:", "--- Logging error ---"}) {  // logging's handleError()
    if (line.find(marker) != std::string_view::npos) {
      return true;
    }
  }
  return false;
}

// A header glued onto a frame line ('  File "x.py", line 3, in fTraceback (most recent...')
// only happens when several threads or processes print tracebacks at once.
bool IsFrameLine(std::string_view text) {
  const std::size_t start = text.find_first_not_of(" \t");
  return start != std::string_view::npos && start > 0 && text.substr(start).starts_with("File \"");
}

}  // namespace

std::optional<std::string_view> TracebackGrouper::BodyOf(const Open& open, std::string_view text,
                                                         PrefixMode mode) {
  switch (mode) {
    case PrefixMode::kExact:
      if (text.starts_with(open.prefix)) {
        return text.substr(open.prefix.size());
      }
      return std::nullopt;
    case PrefixMode::kShape:
      if (SameShape(open.prefix, text)) {
        return text.substr(open.prefix.size());
      }
      return std::nullopt;
    case PrefixMode::kNone:
      return text;
    case PrefixMode::kUnknown:
      break;
  }
  return std::nullopt;
}

void TracebackGrouper::OpenHeader(std::uint64_t line, std::string_view text, std::size_t header_at,
                                  std::span<const std::string_view> before,
                                  std::vector<Traceback>& out) {
  const std::string_view prefix = text.substr(0, header_at);
  for (std::size_t i = open_.size(); i-- > 0;) {
    Open& open = open_[i];
    // Digits may differ only where the traceback's own lines showed that they tick
    // (timestamps); "[rank0]: " and "[rank1]: " are different writers.
    const std::string_view effective =
        open.mode == PrefixMode::kNone ? std::string_view() : std::string_view(open.prefix);
    const bool same_writer = open.mode == PrefixMode::kShape
                                 ? effective.size() == prefix.size() && SameShape(effective, prefix)
                                 : effective == prefix;
    if (!same_writer) {
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
  if (IsFrameLine(prefix) && !open_.empty()) {
    // Glued into another traceback's frames: part of the same burst, and as survivable.
    open.traceback.survived = open_.back().traceback.survived;
  }
  for (std::string_view earlier : before) {
    if (open.traceback.survived || HasSurvivedMarker(earlier)) {
      open.traceback.survived = true;
      break;
    }
    if (SameShape(prefix, earlier)) {
      earlier.remove_prefix(prefix.size());
    }
    if (IsExceptionLine(TrimRight(earlier))) {
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
  body = TrimRight(body);
  switch (open.state) {
    case State::kFrames:
      if (!body.empty() && (body.front() == ' ' || body.front() == '\t')) {
        open.last_line = line;  // a frame, its source line, a caret line, "[Previous line ...]"
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
    if (line - open_[i].last_line > kMaxGap) {
      Close(i, out);
    }
  }
  if (header_at) {
    OpenHeader(line, text, *header_at, before, out);
    return;
  }
  // Pick the traceback this line belongs to: an exact prefix beats a same-shape one beats a
  // header that was glued to other output (no prefix); among equals, the newest.
  while (!open_.empty()) {
    std::size_t best = open_.size();
    PrefixMode best_mode = PrefixMode::kUnknown;
    int best_rank = 4;
    for (std::size_t i = 0; i < open_.size(); ++i) {
      const Open& open = open_[i];
      for (PrefixMode mode : {PrefixMode::kExact, PrefixMode::kShape, PrefixMode::kNone}) {
        if (open.mode != PrefixMode::kUnknown && open.mode != mode) {
          continue;
        }
        auto body = BodyOf(open, text, mode);
        if (mode == PrefixMode::kNone && open.mode == PrefixMode::kUnknown) {
          // Only the first frame line can prove the header was glued to unrelated output.
          body = text.starts_with("  File ") ? body : std::nullopt;
        }
        const int rank = static_cast<int>(mode);
        if (body && rank <= best_rank) {
          best = i;
          best_mode = mode;
          best_rank = rank;
        }
        if (body) {
          break;
        }
      }
    }
    if (best == open_.size()) {
      return;
    }
    Open& open = open_[best];
    const Step step = Advance(open, line, *BodyOf(open, text, best_mode));
    if (step == Step::kBelongs && open.mode == PrefixMode::kUnknown) {
      open.mode = best_mode;  // only a real traceback line settles how its prefix looks
    }
    if (step != Step::kEnded) {
      return;
    }
    Close(best, out);  // ended: the line may still belong to another traceback
  }
}

void TracebackGrouper::Close(std::size_t index, std::vector<Traceback>& out) {
  out.push_back(std::move(open_[index].traceback));
  open_.erase(open_.begin() + static_cast<std::ptrdiff_t>(index));
}

void TracebackGrouper::CloseAll(std::vector<Traceback>& out) {
  for (Open& open : open_) {
    out.push_back(std::move(open.traceback));
  }
  open_.clear();
}

}  // namespace trainwatch::detect
