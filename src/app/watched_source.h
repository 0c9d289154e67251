// WatchedSource: one configured source and its live state — its rules sorted by detector, the
// producer of its lines (a TailSet of files, the kernel log, or the wrapped command's pipes),
// one StreamDetector per stream, and what it read. Owned by Sources; loop thread only.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/daemon_config.h"
#include "detect/stream_detector.h"
#include "detect/time_detectors.h"
#include "rules/source_rules.h"
#include "source/kmsg_reader.h"
#include "source/tail_set.h"

namespace trainwatch::app {

struct WatchedSource {
  config::SourceConfig config;
  rules::SourceRules rules;
  std::unique_ptr<source::TailSet> tails;
  std::map<source::FileId, std::unique_ptr<detect::StreamDetector>> file_streams;
  std::unique_ptr<source::KmsgReader> kmsg;
  std::unique_ptr<detect::StreamDetector> kmsg_stream;
  std::vector<std::unique_ptr<detect::StreamDetector>> wrap_streams;  // stdout, stderr
  detect::SilenceWatch silence{SteadyTime{}};                         // from when the source starts
  std::uint64_t lines = 0;  // read from all its streams since the start, closed ones too
  std::uint64_t bytes = 0;

  // Calls visit(stream, file) for each stream; `file` is null but for tailed files.
  template <typename F>
  void ForEachStream(F&& visit) {
    if (tails) {
      for (auto& [id, stream] : file_streams) {
        auto file = tails->files().find(id);
        if (file != tails->files().end()) {  // else closed with its TailSet, and done
          visit(*stream, file->second.get());
        }
      }
    }
    if (kmsg_stream) {
      visit(*kmsg_stream, nullptr);
    }
    for (auto& stream : wrap_streams) {
      visit(*stream, nullptr);
    }
  }
  // Takes reloaded rules; the streams swap theirs in (one with an open traceback finishes it
  // first).
  void SwapRules(rules::SourceRules fresh);
};

}  // namespace trainwatch::app
