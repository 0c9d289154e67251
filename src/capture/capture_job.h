// CaptureJob: one capture under way (capture/capturer.h) — its request, what its three parts
// brought back, and where its bundle stands. The parts (the in-process collectors on the pool,
// the tools, the ranks' stacks) run at the same time, each done once; the bundle goes through
// one phase after another:
//
//   kGathering ──1 s──▶ kEarlyWaitOver          (the early bundle no longer waits for the tools)
//   kGathering (tools answered) or kEarlyWaitOver, in-process collectors done, a part still out
//       ──▶ kWritingEarly ──written or failed──▶ kEarlyDone    (or straight to kEarlyDone when
//                                                               it does not fit)
//   every part done, no early write on the pool ──▶ kWritingComplete   (nothing more starts)
//
// Shared with the pool's work on it, which may outlive it in the Capturer (see AbandonWedged).
// Loop thread only but for what that work fills in.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bundle/bundle_writer.h"
#include "capture/capture_types.h"
#include "capture/rank_capture.h"
#include "collect/command_runner.h"
#include "collect/redactor.h"
#include "config/capture_config.h"
#include "core/env.h"

namespace trainwatch::capture {

// The parts of a capture that run at once.
enum class CapturePart : unsigned { kBuiltins = 1, kCommands = 2, kRanks = 4 };

class CaptureParts {
 public:
  void Done(CapturePart part) { done_ |= static_cast<unsigned>(part); }
  bool done(CapturePart part) const { return (done_ & static_cast<unsigned>(part)) != 0; }
  bool all_done() const { return done_ == kAll; }
  // The parts still out, named for a person: "the tools, the ranks' stacks".
  std::string Pending() const;

 private:
  static constexpr unsigned kAll = 7;  // every CapturePart
  unsigned done_ = 0;
};

enum class BundlePhase {
  kGathering,        // the parts are being taken; the early bundle waits for the tools
  kEarlyWaitOver,    // kEarlyWait passed: the early bundle goes without the tools
  kWritingEarly,     // the early bundle is on the pool: the complete one waits (same file)
  kEarlyDone,        // the early bundle was written or given up on
  kWritingComplete,  // the complete bundle is under way: nothing more starts for this job
};

struct CaptureJob {
  using Done = std::function<void(const CaptureOutcome& outcome)>;

  // Whether the early bundle is still to be tried.
  bool early_to_come() const {
    return phase == BundlePhase::kGathering || phase == BundlePhase::kEarlyWaitOver;
  }

  CaptureRequest request;
  Done done;
  SteadyTime started;
  std::string host;
  std::string self_container;
  std::string pattern_error;  // why process_pattern found nothing, when it failed
  std::string speakers_note;  // other users' processes left out (capture/speakers.h)
  std::vector<collect::CollectorResult> commands;
  std::vector<collect::CollectorResult> builtins;
  collect::RedactionCounts env_redactions;
  // The in-process collectors' own, merged into env_redactions on the loop when they are done
  // (the ranks' are merged there too, maybe while those still run).
  collect::RedactionCounts builtin_redactions;
  CaptureParts parts;
  BundlePhase phase = BundlePhase::kGathering;
  std::string early_why;
  Result<bundle::BundleResult> early_written = Error{"not written"};
  SteadyTime early_at{};
  std::optional<RankReport> ranks;
  bool reduced = false;
  std::string reduced_why;
  std::vector<std::string> deleted;
  std::string dir;
  std::string file_name;
  Result<bundle::BundleResult> written = Error{"not written"};
  std::shared_ptr<const collect::Redactor> redactor;
  config::CaptureConfig config;
};

// What the finished job (its complete bundle written or not) tells: the bundle, or the early
// one when only that was written, how long it took, the ranks' diagnosis, the tools that hung.
CaptureOutcome OutcomeOf(const CaptureJob& job, SteadyTime now, WallTime wall_now);

}  // namespace trainwatch::capture
