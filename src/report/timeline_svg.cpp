#include "report/timeline_svg.h"

#include <fmt/format.h>

#include <algorithm>

#include "diagnose/suspects.h"
#include "report/html_text.h"
#include "report/json_fields.h"

namespace trainwatch::report {
namespace {

using json = nlohmann::ordered_json;

std::string StringFieldOf(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::int64_t MillisOf(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
}

std::optional<int> IntOf(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? std::optional(it->get<int>())
                                                       : std::nullopt;
}

std::string BaseName(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string LabelOf(const std::optional<int>& rank, const std::string& stream) {
  return rank ? fmt::format("rank {}", *rank) : BaseName(stream);
}

std::string Clipped(std::string text, std::size_t limit) {
  if (text.size() > limit) {
    text.resize(limit);
    text += "...";
  }
  return text;
}

void MarkSuspects(const json& manifest, std::vector<TimelineLane>& lanes) {
  const auto ranks = manifest.find("ranks");
  if (ranks == manifest.end() || !ranks->is_object()) {
    return;
  }
  for (const json& suspect : ArrayField(*ranks, "suspects")) {
    if (!suspect.is_object()) {
      continue;
    }
    const std::optional<int> rank = IntOf(suspect, "rank");
    const std::optional<int> pid = IntOf(suspect, "pid");
    for (TimelineLane& lane : lanes) {
      if (rank ? lane.rank == rank
               : (pid && std::find(lane.pids.begin(), lane.pids.end(), *pid) != lane.pids.end())) {
        lane.suspect = true;
      }
    }
  }
}

// Every rank captured has a lane: a bar's lane without a rank of its own becomes the rank's
// whose process alone writes its stream (a log per rank); a rank with no bar gets an empty
// lane, where its firings and its suspicion still show.
void AddRankLanes(const json& manifest, std::vector<TimelineLane>& lanes) {
  const auto ranks = manifest.find("ranks");
  if (ranks == manifest.end() || !ranks->is_object()) {
    return;
  }
  for (const json& rank_json : ArrayField(*ranks, "ranks")) {
    const std::optional<int> rank = IntOf(rank_json, "rank");
    const std::optional<int> pid = IntOf(rank_json, "pid");
    if (!rank) {
      continue;
    }
    bool has_lane = false;
    for (TimelineLane& lane : lanes) {
      if (!lane.rank && pid && lane.pids == std::vector<int>{*pid}) {
        lane.rank = rank;
        lane.label = LabelOf(rank, lane.stream);
      }
      has_lane = has_lane || lane.rank == rank;
    }
    if (!has_lane && lanes.size() < kMaxTimelineLanes) {
      TimelineLane lane;
      lane.rank = rank;
      lane.label = LabelOf(rank, "");
      lane.detail = StringFieldOf(rank_json, "where");
      if (pid) {
        lane.pids.push_back(*pid);
      }
      lanes.push_back(std::move(lane));
    }
  }
}

// The lane of a firing: its stream's of its rank when its line names one, else its rank's,
// else its stream's first, else a new one (null when no more lanes may be added).
TimelineLane* LaneFor(std::vector<TimelineLane>& lanes, const std::string& stream,
                      const std::optional<int>& rank) {
  for (TimelineLane& lane : lanes) {
    if (lane.stream == stream && (!rank || lane.rank == rank)) {
      return &lane;
    }
  }
  for (TimelineLane& lane : lanes) {
    if (rank && lane.rank == rank) {
      return &lane;
    }
  }
  if (lanes.size() >= kMaxTimelineLanes) {
    return nullptr;
  }
  TimelineLane lane;
  lane.label = LabelOf(rank, stream);
  lane.stream = stream;
  lane.rank = rank;
  lane.detail = "no progress bar";
  lanes.push_back(std::move(lane));
  return &lanes.back();
}

}  // namespace

Timeline TimelineOf(const json& manifest) {
  Timeline timeline;
  timeline.captured_ms = MillisOf(manifest, "created_ms");
  const json incident = ObjectField(manifest, "incident");
  timeline.opened_ms = incident.is_object() ? MillisOf(incident, "opened_ms") : 0;
  const json timeline_json = ObjectField(manifest, "timeline");
  for (const json& lane_json : ArrayField(timeline_json, "lanes")) {
    if (!lane_json.is_object() || timeline.lanes.size() >= kMaxTimelineLanes) {
      continue;
    }
    TimelineLane lane;
    lane.stream = StringFieldOf(lane_json, "stream");
    lane.rank = IntOf(lane_json, "rank");
    lane.detail = StringFieldOf(lane_json, "bar");
    lane.label = LabelOf(lane.rank, lane.stream);
    if (!lane.rank) {
      // A log may hold several bars (an epoch's tqdm, step lines): each lane says which.
      lane.label += " " + lane.detail.substr(0, lane.detail.rfind(" at "));
    }
    for (const json& pid : ArrayField(lane_json, "pids")) {
      if (pid.is_number_integer()) {
        lane.pids.push_back(pid.get<int>());
      }
    }
    for (const json& at : ArrayField(lane_json, "advances_ms")) {
      if (at.is_number_integer()) {
        lane.advances_ms.push_back(at.get<std::int64_t>());
      }
    }
    timeline.lanes.push_back(std::move(lane));
  }
  AddRankLanes(manifest, timeline.lanes);
  if (incident.is_object()) {
    for (const json& firing : ArrayField(incident, "firings")) {
      if (!firing.is_object()) {
        continue;
      }
      const std::string text = StringFieldOf(firing, "text");
      const std::string summary = StringFieldOf(firing, "summary");
      TimelineMark mark;
      mark.ms = MillisOf(firing, "time_ms");
      mark.kind = StringFieldOf(firing, "kind");
      mark.title = Clipped(fmt::format("{} at {}: {}", StringFieldOf(firing, "rule"),
                                       ClockOf(mark.ms), summary.empty() ? text : summary),
                           300);
      if (mark.kind != "warning" && mark.ms != 0 &&
          (timeline.first_error_ms == 0 || mark.ms < timeline.first_error_ms)) {
        timeline.first_error_ms = mark.ms;
      }
      if (TimelineLane* lane = LaneFor(timeline.lanes, StringFieldOf(firing, "stream"),
                                       diagnose::RankOfLine(text))) {
        lane->marks.push_back(std::move(mark));
      }
    }
  }
  MarkSuspects(manifest, timeline.lanes);
  return timeline;
}

namespace {

constexpr double kWidth = 960;
constexpr double kLabelWidth = 200;
constexpr double kRightMargin = 24;
constexpr double kTop = 44;  // three rows of moment labels
constexpr double kLaneHeight = 26;
constexpr double kAxisHeight = 24;
constexpr std::int64_t kMinSpanMs = 10'000;
constexpr std::int64_t kMaxSpanMs = 6 * 3600'000;

struct Scale {
  std::int64_t start = 0;
  std::int64_t end = 0;
  double X(std::int64_t ms) const {
    const double plot = kWidth - kLabelWidth - kRightMargin;
    const double at =
        static_cast<double>(std::clamp(ms, start, end) - start) / static_cast<double>(end - start);
    return kLabelWidth + at * plot;
  }
};

// From a little before the earliest point to the capture (or the latest point), at least
// 10 s wide and at most 6 h (older advances fall off the left edge).
Scale ScaleOf(const Timeline& timeline) {
  std::int64_t first = 0;
  std::int64_t last = timeline.captured_ms;
  auto see = [&](std::int64_t ms) {
    if (ms > 0) {
      first = first == 0 ? ms : std::min(first, ms);
      last = std::max(last, ms);
    }
  };
  see(timeline.first_error_ms);
  see(timeline.opened_ms);
  for (const TimelineLane& lane : timeline.lanes) {
    for (const std::int64_t ms : lane.advances_ms) {
      see(ms);
    }
    for (const TimelineMark& mark : lane.marks) {
      see(mark.ms);
    }
  }
  if (first == 0) {
    first = last;
  }
  first = std::max(first, last - kMaxSpanMs);
  if (last - first < kMinSpanMs) {
    first = last - kMinSpanMs;
  }
  return {first - (last - first) / 30, last};
}

std::string Moment(const Scale& scale, std::int64_t ms, const char* name, int row, double bottom) {
  if (ms <= 0) {
    return {};
  }
  const double x = scale.X(ms);
  return fmt::format(
      "<g class=\"moment {0}\"><line x1=\"{1:.1f}\" y1=\"{2:.1f}\" x2=\"{1:.1f}\" y2=\"{3:.1f}\"/>"
      "<text x=\"{4:.1f}\" y=\"{5}\" text-anchor=\"end\">{0} {6}</text></g>\n",
      name, x, 15.0 + row * 12, bottom, x - 3, 12 + row * 12, ClockOf(ms));
}

std::string LaneSvg(const Scale& scale, const TimelineLane& lane, double y) {
  const double mid = y + kLaneHeight / 2;
  std::string svg = fmt::format(
      "<g class=\"lane{}\" data-label=\"{}\">"
      "<rect class=\"lane-bg\" x=\"0\" y=\"{:.1f}\" width=\"{}\" height=\"{}\"/>"
      "<text class=\"lane-label\" x=\"6\" y=\"{:.1f}\">{}<title>{}</title></text>"
      "<line class=\"track\" x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\"/>",
      lane.suspect ? " suspect" : "", Escape(lane.label), y, kWidth, kLaneHeight, mid + 4,
      Escape(Clipped(lane.label + (lane.suspect ? " (suspect)" : ""), 40)),
      Escape(lane.stream + (lane.detail.empty() ? "" : ": " + lane.detail)), kLabelWidth, mid,
      kWidth - kRightMargin, mid);
  if (lane.advances_ms.empty() && lane.marks.empty() && !lane.detail.empty()) {
    // A rank without a bar: where its stack was, on its lane.
    svg += fmt::format("<text class=\"lane-detail\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>",
                       kLabelWidth + 6, mid - 4, Escape(Clipped(lane.detail, 90)));
  }
  for (const std::int64_t ms : lane.advances_ms) {
    if (ms >= scale.start) {
      svg += fmt::format(R"(<circle class="advance" cx="{:.1f}" cy="{:.1f}" r="2.5"/>)",
                         scale.X(ms), mid);
    }
  }
  if (!lane.advances_ms.empty()) {
    const std::int64_t last = lane.advances_ms.back();
    svg +=
        fmt::format("<text class=\"last-advance\" x=\"{:.1f}\" y=\"{:.1f}\">last advance {}</text>",
                    scale.X(last) + 4, mid - 5, ClockOf(last));
  }
  for (const TimelineMark& mark : lane.marks) {
    const double x = scale.X(mark.ms);
    svg += fmt::format(
        "<path class=\"mark kind-{}\" d=\"M{:.1f},{:.1f}L{:.1f},{:.1f}L{:.1f},{:.1f}L{:.1f},{:.1f}"
        "Z\"><title>{}</title></path>",
        Escape(mark.kind), x, mid - 7, x + 6, mid, x, mid + 7, x - 6, mid, Escape(mark.title));
  }
  return svg + "</g>\n";
}

}  // namespace

std::string TimelineSvg(const Timeline& timeline) {
  const Scale scale = ScaleOf(timeline);
  const std::size_t lanes = std::max<std::size_t>(timeline.lanes.size(), 1);
  const double bottom = kTop + static_cast<double>(lanes) * kLaneHeight;
  const double height = bottom + kAxisHeight;
  std::string svg = fmt::format(
      "<svg id=\"timeline-svg\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {} {:.0f}\" "
      "width=\"{}\" height=\"{:.0f}\" role=\"img\" aria-label=\"timeline of the incident, one "
      "lane per rank or stream\">\n",
      kWidth, height, kWidth, height);
  if (timeline.lanes.empty()) {
    svg +=
        fmt::format("<text x=\"{}\" y=\"{:.0f}\">no progress bar or firing line to draw</text>\n",
                    kLabelWidth, kTop + kLaneHeight / 2);
  }
  for (std::size_t i = 0; i < timeline.lanes.size(); ++i) {
    svg += LaneSvg(scale, timeline.lanes[i], kTop + static_cast<double>(i) * kLaneHeight);
  }
  svg += Moment(scale, timeline.first_error_ms, "first error", 0, bottom);
  svg += Moment(scale, timeline.opened_ms, "opened", 1, bottom);
  svg += Moment(scale, timeline.captured_ms, "captured", 2, bottom);
  for (const std::int64_t ms :
       {scale.start, scale.start + (scale.end - scale.start) / 2, scale.end}) {
    svg += fmt::format(
        "<text class=\"axis\" x=\"{:.1f}\" y=\"{:.0f}\" text-anchor=\"middle\">{}</text>",
        std::clamp(scale.X(ms), kLabelWidth + 24, kWidth - kRightMargin - 24), height - 6,
        ClockOf(ms));
  }
  return svg + "\n</svg>\n";
}

}  // namespace trainwatch::report
