// JobProcesses: what the incident pipeline asks of the sources — the processes writing the
// watched streams (whose job an incident is, whose ranks a capture takes), a new look for them
// (a launcher's ranks start after it), and what the sources add to a capture (log files,
// remembered processes, bars). The daemon's Sources answer; tests give a fake. Loop thread only.
#pragma once

#include <optional>
#include <vector>

#include "capture/capture_types.h"
#include "source/writers.h"

namespace trainwatch::incident {

class JobProcesses {
 public:
  virtual ~JobProcesses() = default;
  // The processes writing the watched streams now (or remembered).
  virtual std::vector<source::WriterProcess> Known() = 0;
  // Look for them again soon.
  virtual void Rescan() = 0;
  // Adds what the sources know (log files, processes, watched dirs, bars) to a capture.
  virtual void FillCapture(capture::CaptureRequest& request) = 0;
  // The furthest step the job of `incident` reached (the attempt's, for the retry policy);
  // none when no bar of it is known.
  virtual std::optional<detect::JobStep> FurthestStep(const detect::Incident& /*incident*/) {
    return std::nullopt;
  }
};

}  // namespace trainwatch::incident
