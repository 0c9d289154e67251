#include "core/source_location.h"

namespace trainwatch {

std::string FormatDiagnostic(const Diagnostic& diagnostic) {
  std::string out = diagnostic.where.file;
  if (diagnostic.where.line > 0) {
    out += ':' + std::to_string(diagnostic.where.line);
    if (diagnostic.where.column > 0) {
      out += ':' + std::to_string(diagnostic.where.column);
    }
  }
  out += ": ";
  out += diagnostic.message;
  return out;
}

}  // namespace trainwatch
