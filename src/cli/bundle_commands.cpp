#include "cli/bundle_commands.h"

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "bundle/bundle_reader.h"
#include "bundle/retention.h"
#include "cli/cli_config.h"
#include "cli/commands.h"
#include "config/daemon_config.h"
#include "core/printable.h"
#include "core/quantity.h"

namespace trainwatch::cli {
namespace {

using json = nlohmann::ordered_json;

Result<std::string> BundlesDir(const BundlesOptions& options, std::ostream& err) {
  if (!options.dir.empty()) {
    return options.dir;
  }
  Result<config::DaemonConfig> config = LoadCliConfig(options.config_path, err);
  if (!config) {
    return config.error();
  }
  return config->capture.bundles_dir;
}

}  // namespace

int RunBundlesList(const BundlesOptions& options, std::ostream& out, std::ostream& err) {
  Result<std::string> dir = BundlesDir(options, err);
  if (!dir) {
    err << "trainwatch bundles: " << dir.error().message << "\n";
    return kExitError;
  }
  json list = json::array();
  for (const bundle::BundleFile& file : bundle::ListBundles(*dir)) {
    json entry = {{"path", file.path}, {"bytes", file.bytes}};
    Result<std::string> text = bundle::ReadManifest(file.path);
    const json manifest = text ? json::parse(*text, nullptr, false) : json();
    if (manifest.is_object()) {
      const json& incident = manifest["incident"];
      entry["time"] = incident.value("opened", "");
      entry["incident"] = incident.value("id", "");
      entry["kind"] = incident.value("kind", "");
      entry["rule"] = incident.contains("rules") && !incident["rules"].empty()
                          ? incident["rules"][0].get<std::string>()
                          : "";
      entry["summary"] = incident.value("summary", "");
      entry["reduced"] = manifest.value("reduced", false);
      entry["early"] = manifest.contains("early");  // its stacks were still being taken
    } else {
      entry["problem"] = text ? "manifest.json is not JSON" : text.error().message;
    }
    list.push_back(std::move(entry));
  }
  if (options.json) {
    out << list.dump(2) << "\n";
    return 0;
  }
  if (list.empty()) {
    out << "no bundles in " << *dir << "\n";
    return 0;
  }
  for (const json& entry : list) {
    if (entry.contains("problem")) {
      out << entry["path"].get<std::string>() << "  (" << entry["problem"].get<std::string>()
          << ")\n";
      continue;
    }
    out << entry["time"].get<std::string>() << "  " << entry["kind"].get<std::string>() << "  "
        << entry["rule"].get<std::string>() << "  "
        << FormatByteSize(entry["bytes"].get<std::uint64_t>()) << "  "
        << entry["incident"].get<std::string>() << (entry["reduced"].get<bool>() ? "  REDUCED" : "")
        << (entry["early"].get<bool>() ? "  EARLY" : "") << "\n    "
        << Printable(entry["path"].get<std::string>()) << "\n";
  }
  return 0;
}

Result<std::string> FindBundle(const BundlesOptions& options, std::ostream& err) {
  if (std::filesystem::exists(options.id)) {
    return options.id;
  }
  Result<std::string> dir = BundlesDir(options, err);
  if (!dir) {
    return dir.error();
  }
  for (const bundle::BundleFile& file : bundle::ListBundles(*dir)) {
    if (file.name == options.id ||
        file.name.find("_" + options.id + ".tar.zst") != std::string::npos) {
      return file.path;
    }
  }
  return Error{"no bundle for '" + options.id + "' in " + *dir};
}

int RunBundlesShow(const BundlesOptions& options, std::ostream& out, std::ostream& err) {
  Result<std::string> found = FindBundle(options, err);
  if (!found) {
    err << "trainwatch bundles: " << found.error().message << "\n";
    return kExitError;
  }
  const std::string path = *found;
  Result<std::string> text = bundle::ReadManifest(path);
  if (!text) {
    err << "trainwatch bundles: " << text.error().message << "\n";
    return kExitError;
  }
  if (options.json) {
    out << *text;
    return 0;
  }
  const json manifest = json::parse(*text, nullptr, false);
  if (!manifest.is_object()) {
    err << "trainwatch bundles: " << path << ": manifest.json is not JSON\n";
    return kExitError;
  }
  const json& incident = manifest["incident"];
  out << "bundle     " << path << "\n"
      << "incident   " << incident.value("id", "") << " (" << incident.value("kind", "") << ")\n"
      << "summary    " << Printable(incident.value("summary", "")) << "\n"
      << "opened     " << incident.value("opened", "") << "\n"
      << "host       " << manifest.value("host", "")
      << (manifest["container"].is_string()
              ? "  container " + manifest["container"].get<std::string>()
              : "")
      << "\n"
      << "trainwatch " << manifest.value("trainwatch_version", "") << "\n";
  if (manifest.contains("early")) {
    out << "EARLY      " << manifest.value("early", "") << "\n";
  }
  if (manifest.value("reduced", false)) {
    out << "REDUCED    " << manifest.value("reduced_why", "") << "\n";
  }
  out << "firing lines:\n";
  for (const json& firing : incident.value("firings", json::array())) {
    // Log text: its escapes shown, never run on the terminal.
    out << "  " << firing.value("rule", "") << " at " << Printable(firing.value("stream", ""))
        << ":" << firing.value("line", 0) << "  " << Printable(firing.value("text", "")) << "\n";
  }
  out << "collectors:\n";
  for (const json& collector : manifest.value("collectors", json::array())) {
    char line[160];
    std::snprintf(line, sizeof line, "  %-18s %-10s %6.2f s %10s%s",
                  collector.value("name", "").c_str(), collector.value("status", "").c_str(),
                  collector.value("duration_seconds", 0.0),
                  FormatByteSize(collector.value("bytes", 0ULL)).c_str(),
                  collector.value("truncated", false) ? " truncated" : "");
    out << line;
    if (collector.contains("detail")) {
      std::string detail = collector["detail"].get<std::string>();
      for (std::size_t at = detail.find('\n'); at != std::string::npos;
           at = detail.find('\n', at)) {
        detail.replace(at, 1, "; ");  // one line per collector
      }
      out << "  " << detail;
    }
    out << "\n";
  }
  const json redactions = manifest.value("redactions", json::object());
  out << "redacted:  ";
  if (redactions.empty()) {
    out << " nothing";
  }
  for (const auto& [rule, count] : redactions.items()) {
    out << " " << rule << " x" << count.get<std::uint64_t>();
  }
  out << "\nfiles: " << manifest.value("files", json::array()).size()
      << " (open it with: tar --zstd -xf " << path << ")\n";
  return 0;
}

}  // namespace trainwatch::cli
