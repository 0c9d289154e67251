// `trainwatch report BUNDLE|INCIDENT [--out FILE]`: the bundle's report.html written where a
// browser (or `w3m`) opens it, without untarring the bundle. A bundle made before reports
// existed gets one made from its manifest (without the device table). Its links reach the
// bundle's files once it is unpacked beside them (`tar --zstd -xf BUNDLE`).
#pragma once

#include <ostream>
#include <string>

#include "cli/bundle_commands.h"

namespace trainwatch::cli {

struct ReportOptions {
  BundlesOptions bundle;  // id: a bundle's path or file name, or an incident id
  std::string out;        // the file to write; "-" for stdout; empty: ./<bundle>.report.html
};

int RunReport(const ReportOptions& options, std::ostream& out, std::ostream& err);

}  // namespace trainwatch::cli
