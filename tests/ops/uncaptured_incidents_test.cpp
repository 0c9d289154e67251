// Which incidents of an earlier run never got their bundle (the daemon stopped during the
// capture), read from incidents.jsonl as the daemon writes it.
#include "ops/uncaptured_incidents.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/temp_dir.h"

namespace trainwatch::ops {
namespace {

std::vector<std::string> Ids(const std::vector<UncapturedIncident>& incidents) {
  std::vector<std::string> ids;
  for (const UncapturedIncident& incident : incidents) {
    ids.push_back(incident.id);
  }
  return ids;
}

std::string Incident(const std::string& id, const std::string& kind, bool manual = false) {
  std::string line = R"({"id":")" + id;
  line += R"(","kind":")" + kind;
  line += R"(","summary":"boom","opened":"2026-11-23T20:00:00.000Z",)";
  line += manual ? R"("reason":"by hand",)" : "";
  return line + "\"firings\":[]}\n";
}

std::string Bundle(const std::string& id, const std::string& error = "") {
  std::string line = R"({"bundle_for":")" + id;
  line += error.empty() ? R"(","bundle":"/b.tar.zst"})" : R"(","bundle":null,"error":")" + error;
  return line + (error.empty() ? "\n" : "\"}\n");
}

TEST(UncapturedIncidents, AnInterruptedOrMissingCaptureIsFoundOnceReported) {
  testing::TempDir dir;
  const std::string log = dir.Write(
      "incidents.jsonl",
      Incident("done", "crash") + Bundle("done") +                                      // bundled
          Incident("cut", "crash") + Bundle("cut", std::string(kInterruptedCapture)) +  // SIGTERM
          Incident("killed", "hang") +  // kill -9 during the capture
          Incident("told", "crash") + Bundle("told", std::string(kInterruptedCapture)) +
          Bundle("told", std::string(kReportedAtStart)) +  // reported at an earlier start
          Incident("warned", "warning") +                  // a warning has no bundle
          Incident("asked", "warning", /*manual=*/true) +  // but a snapshot does (as written
          Incident("snap", "manual", /*manual=*/true) +    // before 0.1.1, and now)
          Incident("failed", "crash") + Bundle("failed", "disk full") + "{not json\n");
  const std::vector<UncapturedIncident> found = FindUncapturedIncidents(log, 1 << 20);
  EXPECT_EQ(Ids(found), (std::vector<std::string>{"cut", "killed", "asked", "snap"}));
  ASSERT_FALSE(found.empty());
  EXPECT_EQ(found[0].summary, "boom");
  EXPECT_EQ(found[0].opened, "2026-11-23T20:00:00.000Z");
  EXPECT_TRUE(FindUncapturedIncidents(dir.PathOf("missing"), 1 << 20).empty());
}

}  // namespace
}  // namespace trainwatch::ops
