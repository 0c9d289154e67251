// `trainwatch manual`: writes the trainwatch(1) manual page as Markdown (for go-md2man) by
// walking the CLI11 definition that --help prints, so the page lists exactly the commands
// and options the binary has, plus fixed sections on files, environment, exit status and
// signals. Called from main() only.
#pragma once

#include <CLI/CLI.hpp>
#include <ostream>

namespace trainwatch::cli {

void WriteManual(const CLI::App& app, std::ostream& out);

}  // namespace trainwatch::cli
