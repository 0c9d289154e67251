// The report's timeline: one lane per rank (or per stream where no rank is known) — the
// progress bar's advances as dots up to its last advance, the firing lines as marks (a
// traceback, a stall, a writer's exit, a device error) — and the moments that matter across
// all lanes: the first error, the incident's opening (a hang's stall) and the capture. The rank
// that went first or stopped first is seen, not read. Drawn as inline SVG, no script. Pure;
// any thread.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace trainwatch::report {

struct TimelineMark {
  std::int64_t ms = 0;
  std::string kind;   // crash, hang, device, warning
  std::string title;  // "python.traceback at 09:12:03: RuntimeError: ..."
};

struct TimelineLane {
  std::string label;   // "rank 3", "train.log"
  std::string detail;  // "'train' at 41/100"
  std::string stream;
  std::optional<int> rank;
  std::vector<int> pids;
  bool suspect = false;
  std::vector<std::int64_t> advances_ms;  // oldest first
  std::vector<TimelineMark> marks;
};

struct Timeline {
  std::vector<TimelineLane> lanes;
  std::int64_t first_error_ms = 0;  // 0: none
  std::int64_t opened_ms = 0;
  std::int64_t captured_ms = 0;
};

// From a bundle's manifest (capture/manifest.h): its "timeline" lanes, its incident's firings
// (each on the lane of its stream and rank, or a lane of its own stream), and the suspects of
// its "ranks" (by rank, else by pid) highlighted. At most kMaxLanes lanes.
inline constexpr std::size_t kMaxTimelineLanes = 64;
Timeline TimelineOf(const nlohmann::ordered_json& manifest);

// <svg id="timeline-svg">: a <g class="lane"> per lane ("lane suspect" for a suspect's), with
// its label, its advances (<circle class="advance">), its last advance, its marks (<path
// class="mark kind-crash">, each with a <title>), and the three moments as labelled lines.
std::string TimelineSvg(const Timeline& timeline);

}  // namespace trainwatch::report
