// Runs bytes through framer and detector to the end: the loop `scan` and the rule example
// checker share. Blocking reads, so for command-line use only; the daemon feeds batches from
// its event loop instead. Single thread.
#pragma once

#include <functional>
#include <string_view>

#include "core/result.h"
#include "detect/line_detector.h"
#include "source/line_framer.h"

namespace trainwatch::detect {

using EventSink = std::function<void(const detect::Event&)>;

// Events reach `sink` in line order (a traceback's event is held until it ends).
// Reads `fd` until end of file. Fails with the system's reason when a read fails.
Status ScanFd(int fd, source::LineFramer& framer, detect::LineDetector& detector,
              detect::TimePoint now, const EventSink& sink);

// Scans an in-memory text as if it were a file.
void ScanText(std::string_view text, source::LineFramer& framer, detect::LineDetector& detector,
              detect::TimePoint now, const EventSink& sink);

}  // namespace trainwatch::detect
