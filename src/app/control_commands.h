// The CLI side of the control socket: `trainwatch status [--json]` and `trainwatch snapshot
// --reason TEXT`, which find the running daemon through the config's state_dir.
#pragma once

#include <ostream>
#include <string>

namespace trainwatch::app {

struct ControlOptions {
  std::string config_path;  // empty: the default config
  bool json = false;
  std::string reason;  // snapshot
};

// Exit status 0, or 2 with a message when no daemon answers.
int RunStatus(const ControlOptions& options, std::ostream& out, std::ostream& err);
int RunSnapshot(const ControlOptions& options, std::ostream& out, std::ostream& err);

}  // namespace trainwatch::app
