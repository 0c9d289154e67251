#include "ops/daemon_counters.h"

#include <gtest/gtest.h>

namespace trainwatch::ops {
namespace {

TEST(DaemonCounters, ABundleOrItsAbsenceAndWhatRetentionRemoved) {
  DaemonCounters counters;
  capture::CaptureOutcome written;
  written.path = "/b/1.tar.zst";
  written.bytes = 4096;
  written.deleted = {"/b/0.tar.zst", "/b/00.tar.zst"};
  counters.CountCapture(written, {});
  capture::CaptureOutcome failed;
  failed.error = "disk full";
  counters.CountCapture(failed, {});
  EXPECT_EQ(counters.bundles_written, 1u);
  EXPECT_EQ(counters.bundle_bytes, 4096u);
  EXPECT_EQ(counters.bundles_failed, 1u);
  EXPECT_EQ(counters.bundles_deleted, 2u);
}

TEST(DaemonCounters, ACollectorRunPerProcessCountsUnderItsConfiguredName) {
  DaemonCounters counters;
  capture::CaptureOutcome outcome;
  outcome.timed_out = {"py-spy-4242", "py-spy-77", "hl-smi-q", "py-spy-x1", "py-spy-"};
  counters.CountCapture(outcome, {"hl-smi-q", "py-spy"});
  EXPECT_EQ(counters.collector_timeouts,
            (std::map<std::string, std::uint64_t>{
                {"py-spy", 2}, {"hl-smi-q", 1}, {"py-spy-x1", 1}, {"py-spy-", 1}}))
      << "only a configured name followed by a pid folds";
}

TEST(DaemonCounters, ActivityMovesWithEveryCount) {
  DaemonCounters counters;
  std::uint64_t last = counters.Activity();
  auto moved = [&] {
    const std::uint64_t now = counters.Activity();
    const bool changed = now != last;
    last = now;
    return changed;
  };
  ++counters.firings_by_rule["a"];
  EXPECT_TRUE(moved());
  ++counters.incidents_by_kind["crash"];
  EXPECT_TRUE(moved());
  ++counters.collector_timeouts["hl-smi"];
  EXPECT_TRUE(moved());
  ++counters.bundles_written;
  EXPECT_TRUE(moved());
  EXPECT_FALSE(moved());
}

}  // namespace
}  // namespace trainwatch::ops
