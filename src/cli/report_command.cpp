#include "cli/report_command.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bundle/bundle_reader.h"
#include "cli/commands.h"
#include "report/report_html.h"

namespace trainwatch::cli {
namespace {

// "20261125T091210Z_node_rule_id.tar.zst" -> "20261125T091210Z_node_rule_id.report.html".
std::string DefaultOut(const std::string& bundle) {
  std::string name = std::filesystem::path(bundle).filename().string();
  for (const char* suffix : {".tar.zst", ".tar"}) {
    if (name.ends_with(suffix)) {
      name.resize(name.size() - std::string_view(suffix).size());
      break;
    }
  }
  return name + ".report.html";
}

}  // namespace

int RunReport(const ReportOptions& options, std::ostream& out, std::ostream& err) {
  Result<std::string> bundle = FindBundle(options.bundle, err);
  if (!bundle) {
    err << "trainwatch report: " << bundle.error().message << "\n";
    return kExitError;
  }
  Result<std::string> html = bundle::ReadMember(*bundle, "report.html");
  if (!html) {
    Result<std::string> manifest = bundle::ReadManifest(*bundle);
    const auto parsed = manifest ? nlohmann::ordered_json::parse(*manifest, nullptr, false)
                                 : nlohmann::ordered_json();
    if (!parsed.is_object()) {
      err << "trainwatch report: " << html.error().message << ", and "
          << (manifest ? "its manifest.json is not JSON" : manifest.error().message) << "\n";
      return kExitError;
    }
    err << "trainwatch report: " << *bundle
        << " has no report.html (made before reports were): made from its manifest, without "
           "the device table\n";
    html = report::ReportHtml(parsed, {});
  }
  if (options.out == "-") {
    out << *html;
    return 0;
  }
  const std::string path = options.out.empty() ? DefaultOut(*bundle) : options.out;
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << *html;
  file.close();
  if (!file) {
    err << "trainwatch report: cannot write " << path << "\n";
    return kExitError;
  }
  out << path << "\n"
      << "open it in a browser (xdg-open " << path << ") or a terminal (w3m " << path
      << "); for its links to the bundle's files, open the report.html of the unpacked bundle "
         "instead (mkdir DIR && tar --zstd -xf "
      << *bundle << " -C DIR)\n";
  return 0;
}

}  // namespace trainwatch::cli
