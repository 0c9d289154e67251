#include "detect/stream_scan.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace trainwatch::detect {
namespace {

// Events held back so they print in line order are capped; past this, order gives way to
// bounded memory.
constexpr std::size_t kMaxHeldEvents = 1000;  // at most 4 MiB of text (kMaxEventTextBytes each)

// Hands `events` to `sink` in line order once no open traceback can still add an earlier one.
void Release(std::vector<detect::Event>& events, const detect::LineDetector& detector, bool force,
             const EventSink& sink) {
  if (events.empty() || (!force && detector.AnyTracebackOpen() && events.size() < kMaxHeldEvents)) {
    return;
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const detect::Event& a, const detect::Event& b) { return a.line < b.line; });
  for (const auto& event : events) {
    sink(event);
  }
  events.clear();
}

void Drain(source::LineFramer& framer, detect::LineDetector& detector, detect::TimePoint now,
           bool end_of_input, std::vector<detect::Event>& events, const EventSink& sink) {
  while (const source::LineBatch* batch = framer.NextBatch(end_of_input)) {
    detector.OnBatch(*batch, now, events);
    Release(events, detector, false, sink);
  }
  if (end_of_input) {
    detector.Finish(events);
    detector.FinishLastWords(events);  // the input ended: its writers said their last
    Release(events, detector, true, sink);
  }
}

}  // namespace

Status ScanFd(int fd, source::LineFramer& framer, detect::LineDetector& detector,
              detect::TimePoint now, const EventSink& sink) {
  std::vector<detect::Event> events;
  while (true) {
    const std::span<char> space = framer.WritableSpace();
    const ssize_t n = ::read(fd, space.data(), space.size());
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return Error{std::strerror(errno)};
    }
    if (n == 0) {
      break;
    }
    framer.Commit(static_cast<std::size_t>(n));
    Drain(framer, detector, now, false, events, sink);
  }
  Drain(framer, detector, now, true, events, sink);
  return Status::Ok();
}

void ScanText(std::string_view text, source::LineFramer& framer, detect::LineDetector& detector,
              detect::TimePoint now, const EventSink& sink) {
  std::vector<detect::Event> events;
  while (!text.empty()) {
    const std::span<char> space = framer.WritableSpace();
    const std::size_t n = std::min(space.size(), text.size());
    std::memcpy(space.data(), text.data(), n);
    framer.Commit(n);
    text.remove_prefix(n);
    Drain(framer, detector, now, false, events, sink);
  }
  Drain(framer, detector, now, true, events, sink);
}

}  // namespace trainwatch::detect
