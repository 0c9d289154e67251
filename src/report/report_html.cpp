#include "report/report_html.h"

#include <fmt/format.h>

#include "cluster/first_failure.h"
#include "core/time_format.h"
#include "detect/attempt_text.h"
#include "report/html_text.h"
#include "report/json_fields.h"
#include "report/timeline_svg.h"

namespace trainwatch::report {
namespace {

using json = nlohmann::ordered_json;

// No network, no script: everything the page needs is here.
constexpr const char* kStyle = R"css(
body { font: 15px/1.45 system-ui, sans-serif; margin: 0; color: #212529; background: #fff; }
main { max-width: 1000px; margin: 0 auto; padding: 0 16px 32px; }
header#verdict { padding: 16px 20px; border-left: 8px solid #868e96; background: #f1f3f5; }
header.cause-hardware { border-color: #c92a2a; background: #fff5f5; }
header.cause-driver { border-color: #862e9c; background: #f8f0fc; }
header.cause-infrastructure { border-color: #1864ab; background: #e7f5ff; }
header.cause-application { border-color: #e67700; background: #fff9db; }
h1 { font-size: 22px; margin: 6px 0; word-break: break-word; }
h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid #dee2e6; }
h3 { font-size: 15px; word-break: break-all; }
#answer strong { font-size: 18px; }
#answer span { margin-right: 24px; }
.meta, footer { color: #495057; font-size: 13px; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; padding: 3px 8px; border-bottom: 1px solid #e9ecef; vertical-align: top; }
pre { background: #f8f9fa; padding: 8px; overflow-x: auto; font-size: 12px; }
mark { background: #ffe066; }
li.suspect, tr.suspect, tr.first { background: #fff3bf; }
.status-ok { color: #2b8a3e; } .status-failed, .status-timed_out, .status-abandoned { color: #c92a2a; }
svg text { font: 11px system-ui, sans-serif; fill: #343a40; }
.lane-bg { fill: transparent; } .lane.suspect .lane-bg { fill: #fff3bf; }
.lane.suspect .lane-label { font-weight: bold; fill: #c92a2a; }
.track { stroke: #ced4da; stroke-width: 1; }
.advance { fill: #2b8a3e; }
.last-advance { fill: #2b8a3e; font-size: 10px; }
.lane-detail { fill: #868e96; font-size: 10px; }
.mark { stroke: #fff; stroke-width: 1; }
.mark.kind-crash { fill: #c92a2a; } .mark.kind-hang { fill: #e67700; }
.mark.kind-device { fill: #862e9c; } .mark.kind-warning { fill: #868e96; }
.moment line { stroke: #495057; stroke-dasharray: 4 3; }
.moment.captured line { stroke: #1864ab; }
.axis { fill: #868e96; }
)css";

std::string TextOf(const json& object, const char* key) {
  if (!object.is_object()) {
    return {};
  }
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    return {};
  }
  return it->is_string() ? it->get<std::string>() : it->dump();
}

std::string ActionText(const std::string& action) {
  if (action == "retry") {
    return "retry: a passing fault";
  }
  if (action == "exclude_node") {
    return "exclude_node: take this node out of the job";
  }
  if (action == "cancel_retries") {
    return "cancel_retries: it will fail the same way again";
  }
  if (action == "reboot_node") {
    return "reboot_node: the device or driver needs a reset";
  }
  return action + ": look closer at the evidence below";
}

// A bundle path as a link: relative to the page, which sits at the bundle's top.
std::string Href(const std::string& path) {
  std::string href;
  for (const char c : path) {
    switch (c) {
      case '%':
        href += "%25";
        break;
      case '#':
        href += "%23";
        break;
      case '?':
        href += "%3F";
        break;
      case ' ':
        href += "%20";
        break;
      default:
        href += c;
    }
  }
  return Escape(href);
}

// What the ranks' stacks say the hang is, when they say it: the sentence a person needs.
std::string StacksSay(const json& manifest) {
  const json ranks = ObjectField(manifest, "ranks");
  const json verdict = ObjectField(ranks, "verdict");
  if (verdict.empty()) {
    return {};
  }
  return fmt::format(
      "<p id=\"stacks-say\">The stacks say: <strong>{}</strong> (cause {}, action {})</p>\n",
      Escape(TextOf(verdict, "says")), Escape(TextOf(verdict, "cause")),
      Escape(ActionText(TextOf(verdict, "action"))));
}

// Every rank of the job: alive, exited (and how), never seen here.
std::string Roster(const json& manifest) {
  const std::string roster = TextOf(ObjectField(manifest, "ranks"), "roster");
  return roster.empty() ? std::string()
                        : "<p id=\"roster\">Ranks: <strong>" + Escape(roster) + "</strong></p>\n";
}

// The culprit's own frames (the job's code, innermost first): the stacks' culprit, else the
// first suspect.
std::string CulpritFrames(const json& manifest) {
  const json ranks = ObjectField(manifest, "ranks");
  const json culprits = ArrayField(ObjectField(ranks, "verdict"), "culprits");
  const json suspects = ArrayField(ranks, "suspects");
  std::string culprit = !culprits.empty() && culprits.front().is_string()
                            ? culprits.front().get<std::string>()
                            : (!suspects.empty() ? TextOf(suspects.front(), "label") : "");
  if (culprit.empty()) {
    return {};
  }
  for (const json& rank : ArrayField(ranks, "ranks")) {
    if (TextOf(rank, "label") != culprit) {
      continue;
    }
    std::string items;
    for (const json& frame : ArrayField(rank, "own_frames")) {
      if (frame.is_string()) {
        items += "<li><code>" + Escape(frame.get<std::string>()) + "</code></li>";
      }
    }
    return items.empty() ? std::string()
                         : "<div id=\"culprit-frames\"><p>" + Escape(culprit) +
                               "'s own code, innermost first:</p><ol>" + items + "</ol></div>\n";
  }
  return {};
}

// Ranks alive without a Python stack, and why the first of them has none: what to install or
// set is in that reason.
std::string StacksMissing(const json& manifest) {
  std::vector<std::string> labels;
  std::string why;
  for (const json& rank : ArrayField(ObjectField(manifest, "ranks"), "ranks")) {
    if (!BoolField(rank, "alive", true) || !TextOf(rank, "python_route").empty()) {
      continue;
    }
    labels.push_back(TextOf(rank, "label"));
    const json notes = ArrayField(rank, "route_notes");
    if (why.empty() && !notes.empty() && notes.back().is_string()) {
      why = notes.back().get<std::string>();
    }
  }
  if (labels.empty()) {
    return {};
  }
  std::string listed;
  for (const std::string& label : labels) {
    listed += (listed.empty() ? "" : ", ") + label;
  }
  return "<p id=\"stacks-missing\">No Python stack for <strong>" + Escape(listed) + "</strong>" +
         (why.empty() ? std::string() : ": " + Escape(why)) + "</p>\n";
}

std::string FirstFailingRank(const json& incident) {
  const std::string rank = TextOf(incident, "first_failing_rank");
  return rank.empty() ? std::string()
                      : "<p id=\"first-rank\">First failing rank: <strong>rank " + Escape(rank) +
                            "</strong> printed the error the others followed</p>\n";
}

std::string Header(const json& manifest) {
  const json incident = ObjectField(manifest, "incident");
  std::string cause = TextOf(incident, "cause");
  std::string action = TextOf(incident, "action");
  std::string from;
  // A hang the rules could not judge takes the stacks' verdict, said as theirs (the sinks were
  // told the same: incident::ConcludedFacts).
  if (const json said = ObjectField(ObjectField(manifest, "ranks"), "verdict");
      cause == "unknown" && !TextOf(said, "cause").empty() && TextOf(said, "cause") != "unknown") {
    cause = TextOf(said, "cause");
    action = TextOf(said, "action");
    from = " (from the stacks)";
  }
  std::string html = fmt::format(
      "<header id=\"verdict\" class=\"cause-{}\">\n"
      "<p class=\"meta\">{} incident <code>{}</code> on {} &middot; opened {} &middot; captured "
      "{}</p>\n<h1 id=\"summary\">{}</h1>\n"
      "<p id=\"answer\"><span class=\"cause\">Cause: <strong>{}</strong>{}</span> "
      "<span class=\"action\">Action: <strong>{}</strong></span></p>\n"
      "<p id=\"why\">{}</p>\n{}",
      Escape(cause), Escape(TextOf(incident, "kind")), Escape(TextOf(incident, "id")),
      Escape(TextOf(manifest, "host")), Escape(TextOf(incident, "opened")),
      Escape(TextOf(manifest, "created")), Escape(TextOf(incident, "summary")), Escape(cause),
      Escape(from), Escape(ActionText(action)), Escape(TextOf(incident, "verdict")),
      StacksSay(manifest) + CulpritFrames(manifest) + FirstFailingRank(incident) +
          Roster(manifest) + StacksMissing(manifest));
  const auto recurrence = incident.find("recurrence");
  const int count =
      recurrence != incident.end() && recurrence->is_number_integer() ? recurrence->get<int>() : 1;
  html +=
      fmt::format("<p id=\"recurrence\">{}; fingerprint <code>{}</code></p>\n",
                  count > 1 ? fmt::format("Seen {} times on this node, this one included", count)
                            : std::string("The first time this failure was seen here"),
                  Escape(TextOf(incident, "fingerprint")));
  if (const std::optional<detect::AttemptPlace> attempt =
          detect::AttemptOfJson(ObjectField(incident, "attempt"))) {
    // Which run of the job this was, and what its earlier ones say about retrying.
    std::string text = detect::AttemptText(*attempt);
    text.front() = 'A';
    html += fmt::format("<p id=\"attempt\">{}{}</p>\n", Escape(text),
                        attempt->why.empty() ? "" : ". Retry policy: " + Escape(attempt->why));
  }
  if (!TextOf(incident, "reason").empty()) {
    html += "<p id=\"reason\">Manual snapshot: " + Escape(TextOf(incident, "reason")) + "</p>\n";
  }
  if (const json peer = ObjectField(incident, "peer"); !peer.empty()) {
    const std::string first = TextOf(peer, "first_rank");
    html += fmt::format(
        "<p id=\"peer\">Captured because node <strong>{}</strong> of the job opened incident "
        "<code>{}</code> ({}: {}; cause {}){}. This node's ranks are shown as they were when "
        "its incident was seen here; that node's bundle tells what failed.</p>\n",
        Escape(TextOf(peer, "node")), Escape(TextOf(peer, "incident")),
        Escape(TextOf(peer, "kind")), Escape(TextOf(peer, "summary")),
        Escape(TextOf(peer, "cause")),
        first.empty() ? std::string() : ", first failing rank " + Escape(first));
  }
  if (const std::string early = TextOf(manifest, "early"); !early.empty()) {
    html += "<p id=\"early\">Early bundle: " + Escape(early) + "</p>\n";
  }
  if (BoolField(manifest, "reduced", false)) {
    html +=
        "<p id=\"reduced\">Reduced bundle: " + Escape(TextOf(manifest, "reduced_why")) + "</p>\n";
  }
  return html + "</header>\n";
}

std::string RanksSection(const json& manifest) {
  std::string html = "<section id=\"ranks\">\n<h2>Ranks</h2>\n";
  const auto ranks = manifest.find("ranks");
  if (ranks == manifest.end() || !ranks->is_object()) {
    return html +
           "<p>No rank was captured: no training process was found, or capture.stacks is "
           "off.</p>\n</section>\n";
  }
  html += "<p id=\"ranks-summary\">" + Escape(TextOf(*ranks, "summary")) + "</p>\n";
  html += "<h3>Suspects</h3>\n<ul id=\"suspects\">\n";
  const json suspects = ArrayField(*ranks, "suspects");
  std::vector<std::string> suspect_labels;
  for (const json& suspect : suspects) {
    suspect_labels.push_back(TextOf(suspect, "label"));
    html += fmt::format(
        "<li class=\"suspect\" data-rank=\"{}\"><strong>{}</strong> (pid {}): {}</li>\n",
        Escape(TextOf(suspect, "rank")), Escape(TextOf(suspect, "label")),
        Escape(TextOf(suspect, "pid")), Escape(TextOf(suspect, "reason")));
  }
  if (suspects.empty()) {
    html += "<li>none: no rank stands out</li>\n";
  }
  html += "</ul>\n";
  const json groups = ArrayField(*ranks, "groups");
  const json each = ArrayField(*ranks, "ranks");
  if (groups.empty() && each.empty()) {
    return html + "<p>No rank's stacks were taken: its processes were gone by then.</p>\n" +
           "</section>\n";
  }
  html +=
      "<h3>Where the ranks are</h3>\n<table id=\"groups\">\n"
      "<tr><th>Ranks</th><th>Where</th><th>In a collective</th></tr>\n";
  for (const json& group : groups) {
    std::string labels;
    for (const json& label : ArrayField(group, "ranks")) {
      labels += (labels.empty() ? "" : ", ") + (label.is_string() ? label.get<std::string>() : "");
    }
    html += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td></tr>\n", Escape(labels),
                        Escape(TextOf(group, "where")),
                        BoolField(group, "in_collective", false) ? "yes" : "no");
  }
  html +=
      "</table>\n<h3>Each rank</h3>\n<table id=\"rank-table\">\n"
      "<tr><th>Rank</th><th>Pid</th><th>CPU</th><th>Where</th><th>Stacks by</th>"
      "<th>Evidence</th></tr>\n";
  for (const json& rank : each) {
    const std::string label = TextOf(rank, "label");
    const bool suspect =
        std::find(suspect_labels.begin(), suspect_labels.end(), label) != suspect_labels.end();
    const std::string cpu =
        BoolField(rank, "alive", true)
            ? (Field(rank, "cpu_percent").is_number()
                   ? fmt::format("{:.0f}%", Field(rank, "cpu_percent").get<double>())
                   : std::string("unknown"))
            : std::string("exited");
    const std::string folder = TextOf(rank, "folder");
    html += fmt::format(
        "<tr{}><td>{}</td><td>{} ({})</td><td>{}</td><td>{}</td><td>{}; {}</td><td>{}</td></tr>\n",
        suspect ? " class=\"suspect\"" : "", Escape(label), Escape(TextOf(rank, "pid")),
        Escape(TextOf(rank, "comm")), Escape(cpu), Escape(TextOf(rank, "where")),
        Escape(TextOf(rank, "python_route").empty() ? "no Python stack"
                                                    : TextOf(rank, "python_route")),
        Escape(TextOf(rank, "native_route").empty() ? "no native stack"
                                                    : TextOf(rank, "native_route")),
        folder.empty() ? std::string()
                       : fmt::format("<a href=\"{}/\">{}/</a>", Href(folder), Escape(folder)));
  }
  html += "</table>\n";
  for (const json& device : ArrayField(*ranks, "devices")) {
    html += fmt::format(
        "<p class=\"utilization\">{} device {}: {}% then {}% during the capture</p>\n",
        Escape(TextOf(device, "tool")), Escape(TextOf(device, "index")),
        Escape(TextOf(device, "first_percent")), Escape(TextOf(device, "second_percent")));
  }
  if (!TextOf(*ranks, "devices_note").empty()) {
    html += "<p id=\"devices-note\">" + Escape(TextOf(*ranks, "devices_note")) + "</p>\n";
  }
  return html + "</section>\n";
}

std::string FiringsSection(const json& manifest) {
  std::string html = "<section id=\"firings\">\n<h2>Firing lines</h2>\n";
  const json incident = ObjectField(manifest, "incident");
  const json firings = ArrayField(incident, "firings");
  if (firings.empty()) {
    html += TextOf(incident, "kind") == "peer"
                ? "<p>None here: captured for another node's incident.</p>\n"
                : "<p>None: a manual snapshot.</p>\n";
  }
  for (const json& firing : firings) {
    const auto time = firing.find("time_ms");
    html += fmt::format("<article class=\"firing kind-{}\">\n<h3>{} at {}:{}{}</h3>\n<pre>",
                        Escape(TextOf(firing, "kind")), Escape(TextOf(firing, "rule")),
                        Escape(TextOf(firing, "stream")), Escape(TextOf(firing, "line")),
                        time != firing.end() && time->is_number_integer()
                            ? " &middot; " + ClockOf(time->get<std::int64_t>()) + " UTC"
                            : std::string());
    for (const json& line : ArrayField(firing, "context")) {
      html += Escape(line.is_string() ? line.get<std::string>() : std::string()) + "\n";
    }
    html += "<mark>" + Escape(TextOf(firing, "text")) + "</mark>";
    if (!TextOf(firing, "frame").empty()) {
      html += "\n  raised at: " + Escape(TextOf(firing, "frame"));
    }
    if (!TextOf(firing, "summary").empty()) {
      html += "\n  &rarr; " + Escape(TextOf(firing, "summary"));
    }
    html += "</pre>\n</article>\n";
  }
  return html + "</section>\n";
}

std::string DevicesSection(const std::vector<DeviceRow>& devices) {
  std::string html = "<section id=\"devices\">\n<h2>Devices</h2>\n";
  if (devices.empty()) {
    return html +
           "<p>No device tool answered a query (hl-smi, nvidia-smi, npu-smi): their status is "
           "in the collectors below.</p>\n</section>\n";
  }
  html +=
      "<table id=\"device-table\">\n<tr><th>Tool</th><th>Index</th><th>Name</th><th>Bus</th>"
      "<th>Utilisation</th><th>Memory</th><th>Temperature</th><th>Power</th><th>Uncorrected "
      "errors</th></tr>\n";
  for (const DeviceRow& row : devices) {
    html += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}"
        "</td><td>{}</td></tr>\n",
        Escape(row.tool), Escape(row.index), Escape(row.name), Escape(row.bus_id),
        Escape(row.utilization), Escape(row.memory), Escape(row.temperature), Escape(row.power),
        Escape(row.errors));
  }
  return html + "</table>\n</section>\n";
}

std::string CollectorsSection(const json& manifest) {
  std::string html =
      "<section id=\"collectors\">\n<h2>Collectors</h2>\n<table>\n"
      "<tr><th>Collector</th><th>Status</th><th>Seconds</th><th>Bytes</th>"
      "<th>Detail</th></tr>\n";
  for (const json& collector : ArrayField(manifest, "collectors")) {
    const std::string status = TextOf(collector, "status");
    const json& duration = Field(collector, "duration_seconds");
    const double seconds = duration.is_number() ? duration.get<double>() : 0.0;
    html += fmt::format(
        "<tr><td>{}</td><td "
        "class=\"status-{}\">{}</td><td>{:.2f}</td><td>{}</td><td>{}</td></tr>\n",
        Escape(TextOf(collector, "name")), Escape(status), Escape(status), seconds,
        Escape(TextOf(collector, "bytes")), Escape(TextOf(collector, "detail")));
  }
  return html + "</table>\n</section>\n";
}

std::string FilesSection(const json& manifest) {
  std::string html =
      "<section id=\"files\">\n<h2>Files</h2>\n<ul>\n"
      "<li><a href=\"manifest.json\">manifest.json</a> (what this page was made from)</li>\n";
  for (const json& file : ArrayField(manifest, "files")) {
    const std::string path = TextOf(file, "path");
    std::string note = TextOf(file, "bytes") + " bytes";
    if (BoolField(file, "truncated", false)) {
      note += ", truncated";
    }
    if (!TextOf(file, "problem").empty()) {
      note += ": " + TextOf(file, "problem");
    }
    html += fmt::format("<li><a href=\"{}\">{}</a> ({})</li>\n", Href(path), Escape(path),
                        Escape(note));
  }
  return html + "</ul>\n</section>\n";
}

// The job's incidents on every node, as this node knew them when it captured (the records on
// the shared directory): where the job failed first, and each node's bundle.
std::string JobSection(const json& manifest) {
  const json incidents = ArrayField(manifest, "job_incidents");
  if (incidents.empty()) {
    return {};
  }
  const std::string job = TextOf(ObjectField(manifest, "job"), "id");
  std::string html = fmt::format(
      "<section id=\"job\">\n<h2>The job on every node</h2>\n<p>Job <code>{}</code>: the "
      "incidents its nodes published on the shared directory, as this node knew them when it "
      "captured, oldest first by each node's own clock; the first failure is highlighted. "
      "<code>trainwatch job {}</code> shows them as they are now.</p>\n<table>\n<thead><tr>"
      "<th>opened (UTC)</th><th>node</th><th>first rank</th><th>kind</th><th>summary</th>"
      "<th>cause, action</th><th>bundle (on that node)</th></tr></thead>\n<tbody>\n",
      Escape(job), Escape(job));
  // The first failure, as `trainwatch job` tells it (cluster/first_failure.h).
  std::vector<cluster::IncidentOpening> openings;
  for (const json& record : incidents) {
    const auto opened = record.find("opened_ms");
    const auto rank = record.find("first_rank");
    openings.push_back(
        {opened != record.end() && opened->is_number_integer() ? opened->get<std::int64_t>() : 0,
         rank != record.end() && rank->is_number_integer()});
  }
  const std::size_t first_index = cluster::FirstFailureIndex(openings);
  std::size_t index = 0;
  for (const json& other : incidents) {
    const bool first = index++ == first_index;
    const auto opened = other.find("opened_ms");
    const std::string when =
        opened != other.end() && opened->is_number_integer()
            ? FormatUtc(std::chrono::system_clock::time_point(
                            std::chrono::milliseconds(opened->get<std::int64_t>())),
                        TimeFormat::kIsoMillis)
            : std::string();
    const std::string bundle = TextOf(other, "bundle");
    // A link only where the path could be one here: bundles on a directory every node mounts.
    const std::string bundle_cell =
        bundle.empty() ? std::string("not yet")
        : bundle.starts_with("/")
            ? fmt::format("<a href=\"file://{}\"><code>{}</code></a>", Href(bundle), Escape(bundle))
            : "<code>" + Escape(bundle) + "</code>";
    html += fmt::format(
        "<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}, {}</td><td>{}</td>"
        "</tr>\n",
        first ? " class=\"first\"" : "", Escape(when), Escape(TextOf(other, "node")),
        Escape(TextOf(other, "first_rank")), Escape(TextOf(other, "kind")),
        Escape(TextOf(other, "summary")), Escape(TextOf(other, "cause")),
        Escape(TextOf(other, "action")), bundle_cell);
  }
  return html + "</tbody>\n</table>\n</section>\n";
}

}  // namespace

std::string ReportHtml(const json& manifest, const std::vector<DeviceRow>& devices) {
  const json incident = ObjectField(manifest, "incident");
  std::string html = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>trainwatch: {} on {} &mdash; "
      "{}</title>\n<style>{}</style>\n</head>\n<body>\n<main>\n",
      Escape(TextOf(incident, "kind")), Escape(TextOf(manifest, "host")),
      Escape(TextOf(incident, "summary")), kStyle);
  html += Header(manifest);
  html +=
      "<nav><p><a href=\"#timeline\">Timeline</a> &middot; <a href=\"#ranks\">Ranks</a> "
      "&middot; <a href=\"#firings\">Firing lines</a> &middot; <a href=\"#devices\">Devices"
      "</a> &middot; <a href=\"#collectors\">Collectors</a> &middot; <a href=\"#files\">"
      "Files</a></p></nav>\n";
  html +=
      "<section id=\"timeline\">\n<h2>Timeline</h2>\n<p>One lane per rank (or log): green "
      "dots are a progress bar's advances, diamonds the firing lines (red a crash, orange a "
      "hang, purple a device error); a suspect's lane is highlighted. Times are UTC.</p>\n";
  html += TimelineSvg(TimelineOf(manifest));
  html += "</section>\n";
  html += JobSection(manifest);
  html += RanksSection(manifest);
  html += FiringsSection(manifest);
  html += DevicesSection(devices);
  html += CollectorsSection(manifest);
  html += FilesSection(manifest);
  html += fmt::format("<footer><p>trainwatch {} &middot; bundle made {}</p></footer>\n",
                      Escape(TextOf(manifest, "trainwatch_version")),
                      Escape(TextOf(manifest, "created")));
  return html + "</main>\n</body>\n</html>\n";
}

}  // namespace trainwatch::report
