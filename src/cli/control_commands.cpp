#include "cli/control_commands.h"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/cli_config.h"
#include "cli/commands.h"
#include "cli/standalone_snapshot.h"
#include "config/daemon_config.h"
#include "core/printable.h"
#include "ops/control_server.h"

namespace trainwatch::cli {
namespace {

using nlohmann::json;

// The daemon resolves paths in its own working directory (/ under systemd), and refuses
// relative ones: a path given relative to the shell is made absolute here.
std::vector<std::string> Absolute(const std::vector<std::string>& paths) {
  std::vector<std::string> absolute;
  absolute.reserve(paths.size());
  for (const std::string& path : paths) {
    if (path.empty()) {
      absolute.push_back(path);  // the daemon says what is wrong with it
      continue;
    }
    std::error_code error;
    const std::filesystem::path made = std::filesystem::absolute(path, error);
    absolute.push_back(error ? path : made.lexically_normal().string());
  }
  return absolute;
}

Result<json> Ask(const ControlOptions& options, const json& request, std::ostream& err,
                 int timeout_seconds = 10, bool* no_daemon = nullptr) {
  Result<config::DaemonConfig> config = LoadCliConfig(options.config_path, err);
  if (!config) {
    return config.error();
  }
  const std::string socket = config->state_dir + "/control.sock";
  Result<std::string> response = ops::ControlRequest(socket, request.dump(), timeout_seconds);
  if (!response) {
    if (no_daemon != nullptr) {
      *no_daemon = true;
    }
    return Error{"no trainwatch daemon answers at " + socket + " (" + response.error().message +
                 "); is it running with this config?"};
  }
  json parsed = json::parse(*response, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return Error{"the daemon sent a reply that is not JSON: " + *response};
  }
  if (!parsed.is_object()) {
    return Error{"the daemon sent a reply that is not a JSON object: " + *response};
  }
  if (parsed.contains("error")) {
    const json& error = parsed["error"];
    return Error{"the daemon says: " +
                 (error.is_string() ? error.get<std::string>() : error.dump())};
  }
  return parsed;
}

void PrintStatus(const json& status, std::ostream& out) {
  out << "trainwatch " << status.value("version", "?") << " (pid " << status.value("pid", 0)
      << "), up " << status.value("uptime_seconds", 0) << "s, " << status.value("rules", 0)
      << " rules, config " << status.value("config", "?") << "\n";
  out << "incidents written: " << status.value("incidents_written", 0);
  if (status.contains("last_incident")) {
    out << " (last " << status["last_incident"].get<std::string>() << ")";
  }
  out << " -> " << status.value("incidents_file", "?") << "\n";
  if (status.contains("settling_incident")) {
    const json& settling = status["settling_incident"];
    out << "incident " << settling.value("id", "?")
        << " settling (firings join it): " << settling.value("kind", "?") << " — "
        << Printable(settling.value("summary", "")) << "\n";
  }
  for (const json& open : status.value("open_incidents", json::array())) {
    out << "open: incident " << open.value("id", "?") << " (" << open.value("kind", "?")
        << ", since " << open.value("opened", "?") << "); `trainwatch incidents ack "
        << open.value("id", "?") << "` resolves it\n";
  }
  if (const auto job = status.find("job"); job != status.end() && job->is_object()) {
    out << "job " << ((*job)["id"].is_string() ? (*job)["id"].get<std::string>() : "unknown")
        << ((*job)["id"].is_string() ? " (from " + job->value("id_from", "?") + ")" : "")
        << " on node " << job->value("node", "?") << " (from " << job->value("node_from", "?")
        << ")\n";
  }
  if (const auto shared = status.find("shared"); shared != status.end() && shared->is_object()) {
    out << "shared directory " << shared->value("dir", "?") << ": " << shared->value("published", 0)
        << " records published, " << shared->value("pending", 0) << " waiting"
        << (shared->value("error", "").empty() ? "" : " (" + shared->value("error", "") + ")")
        << "; watching " << shared->value("watched_jobs", json::array()).size() << " jobs, "
        << shared->value("peer_records", 0) << " peer incidents seen, "
        << shared->value("peer_captures", 0) << " captured for"
        << (shared->value("watch_error", "").empty()
                ? ""
                : " (" + shared->value("watch_error", "") + ")")
        << "\n";
  }
  // Where the daemon is blind: "no incident" does not mean "all is well" there.
  if (const auto health = status.find("health"); health != status.end() && health->is_object()) {
    for (const json& spot : health->value("blind", json::array())) {
      if (spot.is_object()) {
        out << "BLIND (" << Printable(spot.value("reason", "?"))
            << "): " << Printable(spot.value("what", "?")) << ": "
            << Printable(spot.value("why", "")) << "\n";
      }
    }
  }
  if (status.contains("ranks_stale") && status["ranks_stale"].is_string()) {
    out << "ranks: " << Printable(status["ranks_stale"].get<std::string>()) << "\n";
  }
  if (const auto am = status.find("alertmanager"); am != status.end() && am->is_object()) {
    out << "alertmanager: " << am->value("open", 0) << " alerts open, "
        << am->value("ends_unsent", 0) << " ends unsent, " << am->value("posts_ok", 0)
        << " posts ok, " << am->value("posts_failed", 0) << " failed"
        << (am->value("error", "").empty() ? "" : " (" + am->value("error", "") + ")") << "\n";
  }
  for (const json& rank : status.value("ranks", json::array())) {
    out << rank.value("label", "?") << ": pid " << rank.value("pid", 0) << " ("
        << rank.value("comm", "") << ")";
    if (rank["world_size"].is_number()) {
      out << ", world size " << rank["world_size"].get<int>();
    }
    if (rank["local_rank"].is_number()) {
      out << ", local rank " << rank["local_rank"].get<int>();
    }
    for (const json& device : rank.value("devices", json::array())) {
      out << ", " << device.get<std::string>();
    }
    if (rank.value("launcher", 0) != 0) {
      out << ", under " << rank["launcher"].get<int>();
    }
    out << "\n";
  }
  auto print_bars = [&](const json& stream) {
    for (const json& bar : stream.value("bars", json::array())) {
      const std::string label = Printable(bar.value("label", ""));
      out << "      bar ";
      if (label.empty()) {
        out << "(no name)";
      } else {
        out << '\'' << label << '\'';  // streamed apart: GCC 12's false -Wrestrict on "'" + label
      }
      out << " " << bar.value("count", 0);
      if (bar.contains("total")) {
        out << "/" << bar["total"].get<long long>();
      }
      out << (bar.value("complete", false) ? " complete" : "") << ", last advance "
          << bar.value("seconds_since_advance", 0) << "s ago";
      if (const auto p99 = bar.find("interval_p99_seconds"); p99 != bar.end() && p99->is_number()) {
        // The pace a learnt stall threshold is made of (factor x this, floored and capped).
        out << fmt::format(", pace p99 {:.2f}s", p99->get<double>());
      }
      if (const auto rate = bar.find("steps_per_second"); rate != bar.end() && rate->is_number()) {
        out << fmt::format(", {:.1f} steps/s", rate->get<double>());
      }
      if (const auto slow = bar.find("slow"); slow != bar.end() && slow->is_object()) {
        out << fmt::format(" SLOW (was {:.1f} steps/s)",
                           slow->value("steps_per_second_before", 0.0));
      }
      out << "\n";
    }
  };
  for (const json& source : status.value("sources", json::array())) {
    out << "source " << source.value("name", "?") << " [";
    bool first = true;
    for (const json& tag : source.value("tags", json::array())) {
      out << (first ? "" : ", ") << tag.get<std::string>();
      first = false;
    }
    out << "]";
    if (source.contains("kmsg")) {
      out << (source["kmsg"].get<bool>() ? ": /dev/kmsg" : ": /dev/kmsg not readable here");
    }
    out << "\n";
    if (source.value("files", json::array()).empty() && !source.contains("kmsg") &&
        source.value("streams", json::array()).empty()) {
      out << "    no files match yet:";
      for (const json& path : source.value("paths", json::array())) {
        out << " " << path.get<std::string>();
      }
      out << "\n";
    }
    for (const json& file : source.value("files", json::array())) {
      out << "    " << Printable(file.value("path", "?")) << "  offset " << file.value("offset", 0)
          << ", " << file.value("lines", 0) << " lines";
      const json writers = file.value("writers", json::array());
      if (!writers.empty()) {
        out << ", written by";
        for (const json& writer : writers) {
          out << " " << writer.value("pid", 0) << " (" << writer.value("comm", "") << ")";
        }
      }
      if (file.value("job_ended", false)) {
        out << ", job ended";
      }
      if (file.value("gone", false)) {
        out << ", gone (finishing)";
      }
      out << "\n";
      print_bars(file);
    }
    for (const json& stream : source.value("streams", json::array())) {
      out << "    " << Printable(stream.value("name", "?")) << "  " << stream.value("lines", 0)
          << " lines\n";
      print_bars(stream);
    }
    if (const json unwatched = source.value("unwatched", json::object()); !unwatched.empty()) {
      const json listed = unwatched.value("files", json::array());
      out << "    NOT WATCHED: " << unwatched.value("count", 0)
          << " files (tried again at each rescan; past the descriptor budget, read in turn)\n";
      for (const json& file : listed) {
        out << "      " << Printable(file.value("path", "?")) << ": "
            << Printable(file.value("why", "")) << "\n";
      }
      if (unwatched.value("count", std::size_t{0}) > listed.size()) {
        out << "      ... (the first " << listed.size() << " listed)\n";
      }
    }
  }
}

}  // namespace

int RunStatus(const ControlOptions& options, std::ostream& out, std::ostream& err) {
  Result<json> status = Ask(options, {{"command", "status"}}, err);
  if (!status) {
    err << "trainwatch status: " << status.error().message << "\n";
    return kExitError;
  }
  if (options.json) {
    out << status->dump(2) << "\n";
  } else {
    PrintStatus(*status, out);
  }
  return 0;
}

int RunReload(const ControlOptions& options, std::ostream& out, std::ostream& err) {
  bool no_daemon = false;
  // The examples of a big rule set take seconds on a busy machine; systemd's own timeout
  // (TimeoutStartSec=, 90 s) is the longer one.
  Result<json> reply = Ask(options, {{"command", "reload"}}, err, 120, &no_daemon);
  if (!reply) {
    err << "trainwatch reload: " << reply.error().message << "\n";
    return no_daemon ? kExitError : 1;
  }
  out << "reloaded: " << reply->value("reloaded", "?") << "\n";
  return 0;
}

int RunSnapshot(const ControlOptions& options, std::ostream& out, std::ostream& err) {
  if (options.out_dir.empty()) {
    bool no_daemon = false;
    // Long enough for collectors that hang until their deadline.
    Result<json> reply = Ask(options,
                             {{"command", "snapshot"},
                              {"reason", options.reason},
                              {"container", options.container},
                              {"copy", Absolute(options.copy)},
                              {"log", Absolute(options.logs)},
                              {"stacks", options.stacks}},
                             err, 300, &no_daemon);
    if (reply) {
      out << "incident " << reply->value("incident", "?") << " recorded in "
          << reply->value("incidents_file", "?") << "\n";
      if (reply->contains("bundle")) {
        out << "bundle " << (*reply)["bundle"].get<std::string>() << "\n";
      }
      if (reply->contains("bundle_error")) {
        err << "trainwatch snapshot: " << (*reply)["bundle_error"].get<std::string>() << "\n";
        return reply->contains("bundle") ? 0 : 1;
      }
      return 0;
    }
    if (!no_daemon) {
      err << "trainwatch snapshot: " << reply.error().message << "\n";
      return kExitError;
    }
  }
  Result<config::DaemonConfig> config = LoadCliConfig(options.config_path, err);
  if (!config) {
    err << "trainwatch snapshot: " << config.error().message << "\n";
    return kExitError;
  }
  if (options.out_dir.empty()) {
    out << "no daemon answers; capturing here\n";
  }
  return RunStandaloneSnapshot(*config, options, out, err);
}

}  // namespace trainwatch::cli
