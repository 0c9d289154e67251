// Where something sits in an input file, for messages an operator can jump to:
// "rules/nvidia.yaml:12:7: unknown key 'patern'". Plain value type.
#pragma once

#include <cstdint>
#include <string>

namespace trainwatch {

struct SourceLocation {
  std::string file;
  int line = 0;    // 1-based; 0 when unknown
  int column = 0;  // 1-based; 0 when unknown
};

// A problem found in an input file. Loaders collect these instead of stopping at the first,
// so an operator sees every mistake in one run.
struct Diagnostic {
  SourceLocation where;
  std::string message;
};

// "file:line:col: message" (line and column left out when unknown).
std::string FormatDiagnostic(const Diagnostic& diagnostic);

}  // namespace trainwatch
