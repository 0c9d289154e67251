// The CLI side of the control socket: `trainwatch status [--json]`, `trainwatch reload` and
// `trainwatch snapshot`,
// which find the running daemon through the config's state_dir. Without a daemon (or with
// --out), snapshot captures on its own: the one-command replacement of Habana's
// gather_info_docker.py / gather_info_host.py.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace trainwatch::cli {

struct ControlOptions {
  std::string config_path;  // empty: the default config
  bool json = false;
  // snapshot
  std::string reason = "manual snapshot";
  std::string container;          // add this container's docker state (host mode)
  std::vector<std::string> copy;  // extra files or directories
  std::vector<std::string> logs;  // extra logs whose tails to include
  std::string out_dir;            // write the bundle here, on our own (no daemon asked)
  // Take the ranks' stacks with the tools that stop a rank while they read (eu-stack, gdb).
  // Off: a healthy job is not held; only what reads without stopping it is taken.
  bool stacks = false;
};

// Exit status 0, or 2 with a message when no daemon answers.
int RunStatus(const ControlOptions& options, std::ostream& out, std::ostream& err);
int RunSnapshot(const ControlOptions& options, std::ostream& out, std::ostream& err);
// Asks the daemon to reload its config and rules and waits for its verdict: exit 0 when it
// runs on them, 1 when it refused them or the config does not even load here (the daemon
// keeps the old ones; the reason is printed), 2 when no daemon answers. systemd's ExecReload=, so
// that `systemctl reload` fails on a broken config.
int RunReload(const ControlOptions& options, std::ostream& out, std::ostream& err);

}  // namespace trainwatch::cli
