// TracebackGrouper: groups the lines of Python tracebacks so each becomes one event,
// summarised by its final exception line. Handles what real training logs do to them:
// every line prefixed by a rank, host or timestamp ("[rank3]: ", "gpu250: ",
// "[1,0]<stderr>:", "2024-02-21T05:55:25.318312Z DEBUG ...: "), a header glued to the end
// of a progress bar, several ranks' tracebacks interleaved, chained exceptions ("During
// handling of the above exception..."), and tracebacks Python prints but survives
// ("Exception ignored in: ...", "Exception in thread ...:", "--- Logging error ---"), and
// tracebacks whose header was lost (an excerpt, a log that starts mid-traceback): frames
// followed by their exception, or a lone final line of a fatal class. Memory is bounded: a
// few open tracebacks, each keeping only its header and summary. Single thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace trainwatch::detect {

struct Traceback {
  std::uint64_t header_line = 0;
  std::string header_text;  // the segment holding the header
  std::string summary;      // final exception line without its prefix; empty if none seen
  std::uint64_t summary_line = 0;
  // The last `File "...", line N, in F` line seen: the innermost frame (Python prints the
  // outermost first), without its indentation; capped at kMaxFrameBytes.
  std::string innermost_frame;
  bool survived = false;  // Python printed it and carried on
};
inline constexpr std::size_t kMaxFrameBytes = 512;

class TracebackGrouper {
 public:
  // At most this many tracebacks are open at once (one per rank, typically); opening one
  // more closes the oldest.
  static constexpr std::size_t kMaxOpen = 64;

  // How many lines before a header are searched for a "survived" marker: interleaved
  // DataLoader workers print "Exception ignored in: " glued to a progress bar, or a line or
  // two above the header.
  static constexpr std::size_t kMarkerWindow = 3;

  // Feeds one line. `header_at` is set when the rule's header pattern matched this line,
  // at that offset of `text`. The pattern may also match where a header-less traceback
  // shows itself: at a frame's `File "...", line N, in f` (its frames, once no open
  // traceback claims them, open one, reported only if an exception line ends them), or at a
  // final exception line (`pkg.SomeError: message`; one no open traceback claims is a
  // traceback of its own); `before` holds the lines before it, nearest first (up to
  // kMarkerWindow), to spot "Exception ignored in". Tracebacks that end go to `out`.
  void OnLine(std::uint64_t line, std::string_view text, std::optional<std::size_t> header_at,
              std::span<const std::string_view> before, std::vector<Traceback>& out);

  // True while a traceback is open, so every line must be fed.
  bool active() const { return !open_.empty(); }
  // True while an open traceback has printed frames but not yet its exception line: the
  // writer is most likely still printing it (Python reads each frame's source as it goes).
  bool AwaitingException() const;
  // The header line of the oldest open traceback, 0 when none is open. A tailer must not
  // persist an offset past it, or a restart would lose the traceback.
  std::uint64_t EarliestOpenLine() const;

  // Ends every open traceback (end of input), appending them to `out` in header order.
  void CloseAll(std::vector<Traceback>& out);

 private:
  enum class State { kFrames, kAfterException, kChain };
  // How a traceback's lines carry its header's prefix, in order of preference. Until its
  // first frame settles it, a traceback's mode is unknown.
  enum class PrefixMode { kExact, kClock, kLearned, kUnknown };
  struct Open {
    Traceback traceback;
    std::string prefix;
    PrefixMode mode = PrefixMode::kUnknown;
    State state = State::kFrames;
    std::uint64_t last_line = 0;  // last line that belonged to it
    int noise = 0;                // lines with its prefix that fit no traceback grammar
    bool group = false;           // a Python 3.11 "Exception Group Traceback"
    std::string group_writer;     // the writer's prefix before the group's box
    int blanks = 0;
    bool headerless = false;  // opened at a frame: its header is not in the log
  };

  void OpenHeader(std::uint64_t line, std::string_view text, std::size_t header_at,
                  std::span<const std::string_view> before, std::vector<Traceback>& out);
  // A frame line, or a final exception line, at `at` that no open traceback claims starts a
  // header-less traceback.
  void OnHeaderlessFrame(std::uint64_t line, std::string_view text, std::size_t at,
                         std::vector<Traceback>& out);
  void OnLoneException(std::uint64_t line, std::string_view text, std::size_t at,
                       std::vector<Traceback>& out);
  // Gives the line to the open traceback it belongs to; true when one took it as its own.
  bool Route(std::uint64_t line, std::string_view text, std::vector<Traceback>& out);
  // How much of `text` is `open`'s prefix under `mode`, or nullopt when the line is not its.
  static std::optional<std::size_t> PrefixLength(const Open& open, std::string_view text,
                                                 PrefixMode mode);
  // Whether a header with `prefix` comes from the same writer as `open`.
  static bool SameWriter(const Open& open, std::string_view prefix);
  enum class Step {
    kBelongs,    // a line of the traceback
    kTolerated,  // a blank or foreign line it survives
    kEnded,      // the traceback is over; the line is not its
  };
  Step Advance(Open& open, std::uint64_t line, std::string_view body);
  void Close(std::size_t index, std::vector<Traceback>& out);

  std::vector<Open> open_;
};

}  // namespace trainwatch::detect
