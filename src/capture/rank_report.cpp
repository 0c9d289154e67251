#include "capture/rank_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "collect/stack_text.h"
#include "diagnose/suspects_json.h"

namespace trainwatch::capture {
namespace {

// Listed at most: a job of thousands of ranks whose node share is not here is no roster.
constexpr std::size_t kMaxNeverSeen = 64;

using collect::CollectorResult;
using collect::CollectorStatus;
using json = nlohmann::ordered_json;

std::string Why(const CollectorResult& result) {
  std::string why = result.detail.empty() ? CollectorStatusName(result.status) : result.detail;
  return why.substr(0, 300);
}

// The output of a tool (its stdout artifact), empty when there is none.
std::string_view OutputOf(const CollectorResult& result) {
  for (const collect::Artifact& artifact : result.artifacts) {
    if (!artifact.path.ends_with(".stderr")) {
      return artifact.content;
    }
  }
  return {};
}

void MoveArtifacts(CollectorResult& from, CollectorResult& to) {
  for (collect::Artifact& artifact : from.artifacts) {
    to.bytes += artifact.content.size();
    to.artifacts.push_back(std::move(artifact));
  }
  from.artifacts.clear();
}

std::vector<collect::StackFrame> MainFrames(const std::vector<collect::ThreadStack>& threads,
                                            long pid) {
  const collect::ThreadStack* main = collect::MainThread(threads, pid);
  return main == nullptr ? std::vector<collect::StackFrame>{} : main->frames;
}

json WorkersJson(const std::vector<std::pair<int, std::string>>& workers) {
  json out = json::array();
  for (const auto& [pid, where] : workers) {
    out.push_back({{"pid", pid}, {"where", where}});
  }
  return out;
}

// The main thread's Python frames in gdb's py-bt output of process `pid`.
std::vector<collect::StackFrame> MainPythonFramesByGdb(const collect::CollectorResult& gdb,
                                                       long pid) {
  return MainFrames(collect::ParseGdbPythonStacks(OutputOf(gdb)), pid);
}

// "waits: futex_do_wait 63%, hrtimer_nanosleep 33%, running 4% (60 samples)\n", the most
// samples first; empty when not sampled.
std::string WaitsText(const std::map<std::string, int>& waits) {
  std::vector<std::pair<std::string, int>> sorted(waits.begin(), waits.end());
  int total = 0;
  for (const auto& [key, count] : sorted) {
    total += count;
  }
  if (total == 0) {
    return {};
  }
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string text = "waits:";
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    text += fmt::format("{} {} {:.0f}%", i == 0 ? "" : ",", sorted[i].first,
                        100.0 * sorted[i].second / total);
  }
  return text + fmt::format(" ({} samples)\n", total);
}

std::string Identity(const collect::RankProcess& process) {
  const collect::RankIdentity& id = process.identity;
  std::string text =
      process.rank_source.empty() ? "rank unknown" : "rank from " + process.rank_source;
  if (id.local_rank) {
    text += fmt::format(", local rank {}", *id.local_rank);
  }
  if (id.world_size) {
    text += fmt::format(", world size {}", *id.world_size);
  }
  if (id.node_rank) {
    text += fmt::format(", node {}", *id.node_rank);
  }
  for (const auto& [name, value] : id.devices) {
    text += fmt::format(", {}={}", name, value);
  }
  return text;
}

std::string SummaryText(const RankReport& report) {
  std::string text = "# The ranks at the moment of capture (trainwatch)\n\n";
  if (!report.never_seen.empty() && report.world_size) {
    text += fmt::format("Never seen here: {} of world size {}\n\n",
                        fmt::join(report.never_seen, ", "), *report.world_size);
  }
  if (const std::string roster = RosterText(report); !roster.empty()) {
    text += "Ranks: " + roster + "\n\n";
  }
  if (report.stack_verdict) {
    text += fmt::format("The stacks say: {} (cause {}, action {})\n\n", report.stack_verdict->says,
                        rules::CauseName(report.stack_verdict->verdict.cause),
                        rules::ActionName(report.stack_verdict->verdict.action));
  }
  for (const RankEvidence& rank : report.ranks) {
    text += fmt::format("{} pid {} ({}): {}\n", rank.process.label(), rank.process.pid,
                        rank.process.comm, Identity(rank.process));
    text += fmt::format("  where: {}\n", rank.where);
    text += fmt::format("  cpu: {}\n", rank.cpu_percent
                                           ? fmt::format("{:.0f}% over {:.1f} s", *rank.cpu_percent,
                                                         report.cpu_window_seconds)
                                           : std::string(rank.alive ? "unknown" : "exited"));
    if (rank.device) {
      text += fmt::format("  device: {} {}: {:.0f}% then {:.0f}%\n", rank.device->tool,
                          rank.device->index, rank.device->first, rank.device->second);
    }
    text +=
        fmt::format("  python stacks: {}; native stacks: {}; paused {:.2f} s\n",
                    rank.python_route.empty() ? "none" : rank.python_route,
                    rank.native_route.empty() ? "none" : rank.native_route, rank.paused_seconds);
    for (const std::string& note : rank.route_notes) {
      text += "  not by " + note + "\n";
    }
    for (const auto& [pid, where] : rank.workers) {
      text += fmt::format("  worker pid {}: {}\n", pid, where);
    }
  }
  text += "\n# Groups (by where each rank's main thread is)\n";
  for (const diagnose::RankGroup& group : report.diagnosis.groups) {
    text += fmt::format("{}: {}{}\n", diagnose::JoinLabels(group.labels), group.where,
                        group.in_collective ? " (in a collective)" : "");
  }
  text += "\n# Suspects\n";
  if (report.diagnosis.suspects.empty()) {
    text += "none: every rank is where its peers are\n";
  }
  for (const diagnose::Suspect& suspect : report.diagnosis.suspects) {
    text += fmt::format("{} (pid {}): {}\n", suspect.label, suspect.pid, suspect.reason);
  }
  if (!report.devices.empty()) {
    text += "\n# Devices (utilisation at the start and a CPU window later)\n";
    for (const collect::DeviceUtilization& device : report.devices) {
      text += fmt::format("{} {}: {:.0f}% then {:.0f}%\n", device.tool, device.index, device.first,
                          device.second);
    }
    if (!report.devices_note.empty()) {
      text += report.devices_note + "\n";
    }
  }
  for (const std::string& note : report.notes) {
    text += "note: " + note + "\n";
  }
  return text;
}

}  // namespace

std::string RosterText(const RankReport& report) {
  std::vector<std::string> alive;
  std::vector<std::string> exited;  // without a known cause
  std::vector<std::string> parts;
  for (const RankEvidence& rank : report.ranks) {
    if (rank.alive) {
      alive.push_back(rank.process.label());
    } else if (rank.process.exit_cause.empty()) {
      exited.push_back(rank.process.label());
    }
  }
  if (!alive.empty()) {
    parts.push_back(diagnose::JoinLabels(alive) + " alive");
  }
  for (const RankEvidence& rank : report.ranks) {
    if (!rank.alive && !rank.process.exit_cause.empty()) {
      parts.push_back(rank.process.label() + " exited (" + rank.process.exit_cause + ")");
    }
  }
  if (!exited.empty()) {
    parts.push_back(diagnose::JoinLabels(exited) + " exited");
  }
  if (!report.never_seen.empty()) {
    std::vector<std::string> labels;
    for (int rank : report.never_seen) {
      labels.push_back("rank " + std::to_string(rank));
    }
    parts.push_back(diagnose::JoinLabels(labels) + " never seen");
  }
  if (parts.empty()) {
    return {};
  }
  std::string text = report.world_size ? fmt::format("world size {}: ", *report.world_size) : "";
  return text + fmt::format("{}", fmt::join(parts, "; "));
}

std::vector<collect::StackFrame> MainPythonFrames(const collect::CollectorResult* gdb,
                                                  const collect::CollectorResult* py_spy,
                                                  const std::string* hook_dump, long pid) {
  if (py_spy != nullptr && py_spy->status == CollectorStatus::kOk) {
    return MainFrames(collect::ParsePySpyDump(OutputOf(*py_spy)), pid);
  }
  if (hook_dump != nullptr && !hook_dump->empty()) {
    std::vector<collect::StackFrame> frames = MainFrames(collect::ParseFaulthandler(*hook_dump), 0);
    if (!frames.empty()) {
      return frames;
    }
  }
  if (gdb != nullptr && gdb->status == CollectorStatus::kOk) {
    return MainPythonFramesByGdb(*gdb, pid);
  }
  return {};
}

std::string RankFolder(const collect::RankProcess& process) {
  return process.rank ? fmt::format("ranks/{}", *process.rank)
                      : fmt::format("ranks/pid-{}", process.pid);
}

void AssembleRankReport(RankReport& report, std::vector<RankToolResults> tools,
                        const collect::Redactor& redactor, collect::RedactionCounts& counts,
                        const std::vector<std::string>& pythons, const diagnose::JobClues& clues) {
  CollectorResult& result = report.result;
  result.name = "ranks";
  std::vector<diagnose::RankState> states;
  for (std::size_t i = 0; i < report.ranks.size(); ++i) {
    RankEvidence& rank = report.ranks[i];
    const long pid = rank.process.pid;
    RankToolResults& tool = tools[i];
    diagnose::RankState state{rank.process.label(),
                              rank.process.rank,
                              rank.process.pid,
                              rank.alive,
                              {},
                              {},
                              rank.cpu_percent,
                              rank.alive ? std::string() : rank.process.exit_cause,
                              {},
                              rank.waits};
    if (tool.native != nullptr) {
      rank.paused_seconds += tool.native->duration_seconds;
      if (tool.native->status == CollectorStatus::kOk) {
        rank.native_route = "eu-stack";
        state.native = MainFrames(collect::ParseEuStack(OutputOf(*tool.native)), pid);
      } else {
        rank.route_notes.push_back("eu-stack: " + Why(*tool.native));
      }
    }
    if (tool.py_spy != nullptr) {
      if (tool.py_spy->status == CollectorStatus::kOk) {
        rank.python_route = "py-spy";
        state.python = MainFrames(collect::ParsePySpyDump(OutputOf(*tool.py_spy)), pid);
      } else {
        rank.route_notes.push_back("py-spy: " + Why(*tool.py_spy));
      }
    }
    if (rank.python_route.empty() && tool.faulthandler != nullptr) {
      std::vector<collect::StackFrame> python =
          MainFrames(collect::ParseFaulthandler(*tool.faulthandler), 0);
      if (!python.empty()) {
        rank.python_route = "faulthandler";
        state.python = std::move(python);
        collect::AddText(result, RankFolder(rank.process) + "/faulthandler.txt",
                         *tool.faulthandler);
      } else {
        rank.route_notes.push_back(
            "faulthandler: " + (tool.hook_why.empty()
                                    ? std::string("the Python hook wrote nothing when signalled")
                                    : tool.hook_why));
      }
    }
    if (tool.gdb != nullptr) {
      rank.paused_seconds += tool.gdb->duration_seconds;
      const std::string_view output = OutputOf(*tool.gdb);
      if (rank.native_route.empty() && tool.gdb->status == CollectorStatus::kOk) {
        std::vector<collect::StackFrame> native =
            MainFrames(collect::ParseGdbNativeStacks(output), pid);
        if (!native.empty()) {
          rank.native_route = "gdb";
          state.native = std::move(native);
        }
      }
      if (rank.python_route.empty()) {
        std::vector<collect::StackFrame> python =
            MainFrames(collect::ParseGdbPythonStacks(output), pid);
        if (!python.empty()) {
          rank.python_route = "gdb";
          state.python = std::move(python);
        } else if (tool.gdb->status != CollectorStatus::kOk) {
          rank.route_notes.push_back("gdb: " + Why(*tool.gdb));
        } else if (!tool.python_helper_why.empty()) {
          rank.route_notes.push_back("gdb: no py-bt, native stacks only: " +
                                     tool.python_helper_why);
        } else if (output.find("Undefined command: \"py-bt\"") != std::string_view::npos) {
          rank.route_notes.push_back(fmt::format(
              "gdb: it has no py-bt: install {}-dbg (the CPython gdb helpers)", pythons[i]));
        } else {
          rank.route_notes.push_back("gdb: no Python frame in any thread (not Python?)");
        }
      }
    }
    for (auto& [worker, gdb] : tool.workers) {
      if (gdb == nullptr || gdb->status != CollectorStatus::kOk) {
        rank.workers.emplace_back(worker, gdb == nullptr ? "not taken" : "no stack: " + Why(*gdb));
        continue;
      }
      diagnose::WorkerStack stack{worker, MainPythonFramesByGdb(*gdb, worker)};
      rank.workers.emplace_back(worker, diagnose::DescribeStack(stack.python, {}));
      state.workers.push_back(std::move(stack));
      MoveArtifacts(*gdb, result);
    }
    for (CollectorResult* ran : {tool.native, tool.py_spy, tool.gdb}) {
      if (ran != nullptr && ran->status == CollectorStatus::kOk) {
        MoveArtifacts(*ran, result);
      }
    }
    const std::string folder = RankFolder(rank.process);
    if (tool.flight_recorder != nullptr && *tool.flight_recorder) {
      // A pickle: binary, not redacted (it holds op names, sizes and stack frames).
      rank.flight_recorder_file = folder + "/flight-recorder.pickle";
      collect::AddText(result, rank.flight_recorder_file, **tool.flight_recorder, false);
    } else {
      rank.flight_recorder_why = tool.flight_recorder_why;
    }
    collect::AddText(result, folder + "/cmdline.txt", rank.process.cmdline + "\n");
    if (!rank.process.environ.empty()) {
      collect::AddText(result, folder + "/environ.txt",
                       redactor.RedactEnvironment(rank.process.environ, counts), false);
    }
    collect::AddText(result, folder + "/cpu.txt",
                     (rank.cpu_percent ? fmt::format("{:.1f}% of a CPU over {:.2f} s\n",
                                                     *rank.cpu_percent, report.cpu_window_seconds)
                                       : std::string(rank.alive ? "unknown\n" : "exited\n")) +
                         WaitsText(rank.waits));
    states.push_back(std::move(state));
  }
  report.diagnosis = diagnose::Diagnose(states, clues);
  diagnose::JobShape shape;
  shape.all_local = !report.ranks.empty();
  for (const RankEvidence& rank : report.ranks) {
    const collect::RankIdentity& id = rank.process.identity;
    shape.world_size = std::max(shape.world_size, id.world_size);
    // The whole job runs here when this node's share is all of it (a first node's ranks are
    // their local ranks too: that alone says nothing).
    shape.all_local = shape.all_local && rank.process.rank && id.world_size &&
                      id.local_world_size && *id.local_world_size == *id.world_size;
  }
  shape.error_printed = clues.error_printed;
  report.stack_verdict = diagnose::JudgeStacks(states, shape, clues.stack_rules.get());
  report.world_size = shape.world_size;
  if (shape.all_local && shape.world_size) {
    std::set<int> seen;
    for (const RankEvidence& rank : report.ranks) {
      seen.insert(*rank.process.rank);  // all_local: every rank is known
    }
    for (int r = 0; r < *shape.world_size && report.never_seen.size() < kMaxNeverSeen; ++r) {
      if (!seen.contains(r)) {
        report.never_seen.push_back(r);
      }
    }
  }
  for (std::size_t i = 0; i < report.ranks.size(); ++i) {
    for (const collect::StackFrame& frame : states[i].python) {
      if (report.ranks[i].own_frames.size() < kMaxOwnFrames && !frame.file.empty() &&
          !diagnose::IsLibraryFile(frame.file)) {
        report.ranks[i].own_frames.push_back(frame.function + " at " +
                                             diagnose::Basename(frame.file) + ":" +
                                             std::to_string(frame.line));
      }
    }
    const RankEvidence& rank = report.ranks[i];
    report.ranks[i].where =
        rank.alive ? diagnose::DescribeStack(states[i].python, states[i].native)
                   : (rank.process.exit_cause.empty() ? std::string("exited")
                                                      : "exited (" + rank.process.exit_cause + ")");
  }
  collect::AddText(result, "ranks/summary.txt", SummaryText(report));
  for (const std::string& note : report.notes) {
    collect::AddDetail(result, note);
  }
  std::size_t stacked = 0;
  for (const RankEvidence& rank : report.ranks) {
    stacked += rank.python_route.empty() && rank.native_route.empty() ? 0 : 1;
    if (rank.python_route.empty() && !rank.route_notes.empty()) {
      collect::AddDetail(result,
                         rank.process.label() + ": no Python stack: " + rank.route_notes.back());
    }
  }
  if (report.ranks.empty()) {
    result.status = CollectorStatus::kSkipped;
    result.detail = "no training process known";
  } else if (stacked == 0) {
    result.status = CollectorStatus::kFailed;
  }
  result.duration_seconds = report.seconds;
}

std::string RanksJson(const RankReport& report) {
  json ranks = json::array();
  for (const RankEvidence& rank : report.ranks) {
    const collect::RankIdentity& id = rank.process.identity;
    json entry = {{"label", rank.process.label()},
                  {"rank", rank.process.rank ? json(*rank.process.rank) : json(nullptr)},
                  {"rank_source", rank.process.rank_source},
                  {"pid", rank.process.pid},
                  {"comm", rank.process.comm},
                  {"local_rank", id.local_rank ? json(*id.local_rank) : json(nullptr)},
                  {"world_size", id.world_size ? json(*id.world_size) : json(nullptr)},
                  {"node_rank", id.node_rank ? json(*id.node_rank) : json(nullptr)},
                  {"launcher", rank.process.launcher},
                  {"alive", rank.alive},
                  {"exit_cause", rank.process.exit_cause},
                  {"cpu_percent", rank.cpu_percent ? json(*rank.cpu_percent) : json(nullptr)},
                  {"waits", rank.waits},
                  {"python_route", rank.python_route},
                  {"native_route", rank.native_route},
                  {"route_notes", rank.route_notes},
                  {"paused_seconds", rank.paused_seconds},
                  {"where", rank.where},
                  {"own_frames", rank.own_frames},
                  {"workers", WorkersJson(rank.workers)},
                  {"flight_recorder", rank.flight_recorder_file.empty()
                                          ? json{{"why", rank.flight_recorder_why}}
                                          : json{{"file", rank.flight_recorder_file}}},
                  {"folder", RankFolder(rank.process)}};
    json devices = json::object();
    for (const auto& [name, value] : id.devices) {
      devices[name] = value;
    }
    entry["devices"] = std::move(devices);
    entry["device"] = rank.device ? json{{"tool", rank.device->tool},
                                         {"index", rank.device->index},
                                         {"first_percent", rank.device->first},
                                         {"second_percent", rank.device->second}}
                                  : json(nullptr);
    if (!id.run_id.empty()) {
      entry["run_id"] = id.run_id;
    }
    if (!id.master.empty()) {
      entry["master"] = id.master;
    }
    if (!id.slurm_job.empty()) {
      entry["slurm_job"] = id.slurm_job;
    }
    ranks.push_back(std::move(entry));
  }
  json groups = json::array();
  for (const diagnose::RankGroup& group : report.diagnosis.groups) {
    groups.push_back(
        {{"ranks", group.labels}, {"where", group.where}, {"in_collective", group.in_collective}});
  }
  json out = {
      {"ranks", std::move(ranks)},
      {"verdict", report.stack_verdict ? json(diagnose::StackVerdictJson(*report.stack_verdict))
                                       : json(nullptr)},
      {"launchers", report.launchers},
      {"groups", std::move(groups)},
      {"suspects", diagnose::SuspectsJson(report.diagnosis.suspects)},
      {"summary", report.diagnosis.Summary()},
      {"cpu_window_seconds", report.cpu_window_seconds},
      {"seconds", report.seconds}};
  if (!report.notes.empty()) {
    out["notes"] = report.notes;
  }
  if (const std::string roster = RosterText(report); !roster.empty()) {
    out["roster"] = roster;
  }
  if (!report.never_seen.empty()) {
    out["never_seen"] = report.never_seen;  // ranks of the job's WORLD_SIZE not found here
  }
  json devices = json::array();
  for (const collect::DeviceUtilization& device : report.devices) {
    devices.push_back({{"tool", device.tool},
                       {"index", device.index},
                       {"first_percent", device.first},
                       {"second_percent", device.second}});
  }
  out["devices"] = std::move(devices);
  if (!report.devices_note.empty()) {
    out["devices_note"] = report.devices_note;
  }
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace trainwatch::capture
