#include "manual.h"

#include <string>
#include <string_view>
#include <vector>

namespace trainwatch::cli {

namespace {

// Markdown would take these for emphasis or code (`TRAINWATCH_STATE_DIR`, `**/*.log`).
std::string Escape(std::string_view text) {
  std::string escaped;
  for (const char c : text) {
    if (c == '\\' || c == '*' || c == '_' || c == '`' || c == '<' || c == '[') {
      escaped += '\\';
    }
    escaped += c;
  }
  return escaped;
}

bool Hidden(const CLI::App* command) { return command->get_group().empty(); }

// CLI11's type name is "TEXT", "INT", ...; a vector option reads "TEXT ..." in --help.
std::string Argument(const CLI::Option& option) {
  std::string type = option.get_type_name();
  if (type.empty()) {
    return "";
  }
  std::string argument = "*" + Escape(type) + "*";
  if (option.get_items_expected_max() > 1) {
    argument += "...";
  }
  return argument;
}

std::string Names(const CLI::Option& option) {
  if (option.get_positional()) {
    return "*" + Escape(option.get_name(true)) + "*" +
           (option.get_items_expected_max() > 1 ? "..." : "");
  }
  std::string names;
  for (const auto& name : option.get_snames()) {
    names += (names.empty() ? "" : ", ") + std::string("**-") + Escape(name) + "**";
  }
  for (const auto& name : option.get_lnames()) {
    names += (names.empty() ? "" : ", ") + std::string("**--") + Escape(name) + "**";
  }
  const std::string argument = Argument(option);
  return argument.empty() ? names : names + " " + argument;
}

void WriteOption(const CLI::Option& option, std::ostream& out) {
  out << Names(option) << "\n:   " << Escape(option.get_description());
  std::vector<std::string> notes;
  if (option.get_required()) {
    notes.push_back("required");
  }
  if (!option.get_default_str().empty()) {
    notes.push_back("default: " + Escape(option.get_default_str()));
  }
  if (!option.get_envname().empty()) {
    notes.push_back("environment: " + Escape(option.get_envname()));
  }
  for (size_t i = 0; i < notes.size(); ++i) {
    out << (i == 0 ? " (" : "; ") << notes[i];
  }
  out << (notes.empty() ? "" : ")") << "\n\n";
}

std::vector<const CLI::Option*> VisibleOptions(const CLI::App& command) {
  return command.get_options([&command](const CLI::Option* option) {
    return !option->get_group().empty() && option != command.get_help_ptr() &&
           option != command.get_version_ptr();
  });
}

// One section per command, nested ones ("bundles list") under their full path.
void WriteCommand(const CLI::App& command, const std::string& path, std::ostream& out) {
  const auto options = VisibleOptions(command);
  const auto subcommands =
      command.get_subcommands([](const CLI::App* sub) { return !Hidden(sub); });
  out << "### " << Escape(path) << "\n\n";
  out << "**" << Escape(path) << "**";
  if (!subcommands.empty()) {
    out << " *COMMAND*";
  }
  for (const auto* option : options) {
    if (!option->get_positional()) {
      out << " [*OPTIONS*]";
      break;
    }
  }
  for (const auto* option : options) {
    if (option->get_positional()) {
      out << " " << Names(*option);
    }
  }
  out << "\n\n" << Escape(command.get_description()) << "\n\n";
  for (const auto* option : options) {
    WriteOption(*option, out);
  }
  for (const auto* sub : subcommands) {
    WriteCommand(*sub, path + " " + sub->get_name(), out);
  }
}

// The prose the CLI definition cannot say. Paths as the Debian package installs them.
constexpr std::string_view kDescription = R"(# DESCRIPTION

**trainwatch** watches the logs of ML training jobs (Intel Gaudi, NVIDIA, Ascend), the
**$HABANA\_LOGS** directory and the kernel log, and recognises crashes and hangs from
operator-editable rules (see **trainwatch-rules**(5)): Python tracebacks, collective
timeouts, out-of-memory errors, driver errors, the OOM killer, stalled progress bars and
silence. Each failure is recorded as one incident in *incidents.jsonl* in the state
directory, with a bundle of evidence (device tools' output, the training processes'
command lines and environments with secrets redacted, log tails) captured at that moment.

**trainwatch daemon** runs in the foreground under systemd or a container runtime;
**trainwatch wrap** runs one job under watch; **trainwatch scan** and **trainwatch check**
work offline on logs and rule files.

)";

constexpr std::string_view kProse = R"(# FILES

*/etc/trainwatch/trainwatch.yaml*
:   The host's config, installed by the Debian package and used by the systemd unit and by
    any command given neither **--config** nor **$TRAINWATCH\_CONFIG**. It watches
    */var/log/training/\*\*/\*.log*, **$HABANA\_LOGS** (default */var/log/habana\_logs*) and
    the kernel log, and keeps its state in */var/lib/trainwatch*. Check a change with
    **trainwatch check --config** *FILE*.

*/usr/share/trainwatch/trainwatch.yaml*
:   The per-user default, used when */etc/trainwatch/trainwatch.yaml* does not exist (an
    installation from source, a user's own run): it watches *~/trainwatch-logs*,
    *~/.habana\_logs* and the kernel log, and keeps its state in
    *~/.local/state/trainwatch*. The environment variables below apply to both.

*/usr/share/trainwatch/rules*
:   The shipped rule packs, used when the config names no **rules**; found next to the
    binary (*../share/trainwatch/rules*), so a relocated installation needs no flag.

*/usr/share/trainwatch/python/sitecustomize.py*
:   The Python hook **wrap** puts first on the command's **PYTHONPATH**: on signal
    **SIGRTMIN+3** each interpreter writes every thread's stack to
    *state\_dir/stacks/wrap-PID/PID.stacks*, where a capture reads it (no debugger).
    Off with **wrap.python\_hook: false**, or **TRAINWATCH\_PYTHON\_HOOK=0** for one job.

*/var/lib/trainwatch*
:   The state directory under systemd (**StateDirectory=**) and in the container image:
    *incidents.jsonl*, *offsets.json*, the control socket *control.sock*, *bundles/* and
    the compiled rule cache *cache/*.

# ENVIRONMENT

**TRAINWATCH\_CONFIG**
:   The config file when **--config** is not given.

**TRAINWATCH\_STATE\_DIR**
:   The state directory, as the shipped config reads it (else **$STATE\_DIRECTORY**, which
    systemd sets, else *~/.local/state/trainwatch*).

**TRAINWATCH\_LOGS**
:   The training logs the shipped configs watch (default */var/log/training* in the host's
    config, *~/trainwatch-logs* in the per-user one).

**HABANA\_LOGS**
:   The Habana stack's log directory, watched and added to bundles (default
    */var/log/habana\_logs* in the host's config, *~/.habana\_logs* in the per-user one).

**TRAINWATCH\_LOG\_FORMAT**
:   **human** or **json**: the daemon's own log lines, as **--log-format**.

# EXIT STATUS

**0**
:   Success; **scan**: no crash, hang or device rule fired; **daemon**: stopped by a signal.

**1**
:   **scan**: a crash, hang or device rule fired; **reload**: the daemon refused the config
    or rules (it keeps the old ones), or the config does not load.

**2**
:   An error: bad command line, unusable config or rules, no daemon answering.

**wrap** exits with the status of the wrapped command (128 + the signal that ended it).

# SIGNALS

**SIGHUP**
:   **daemon**: reload the config and the rules; a broken config is logged with its
    file:line:col and the old one stays in use. **trainwatch reload** does the same and
    waits for the verdict (exit 1 when refused): the unit's ExecReload=.

**SIGTERM**, **SIGINT**
:   **daemon**: save the read positions, close everything, exit 0. **wrap**: forwarded to
    the command.

# SEE ALSO

**trainwatch-rules**(5), **systemctl**(1), **journalctl**(1), **tar**(1), **zstd**(1)
)";

}  // namespace

void WriteManual(const CLI::App& app, std::ostream& out) {
  std::string summary = app.get_description();
  const std::string prefix = app.get_name() + ": ";
  if (summary.rfind(prefix, 0) == 0) {
    summary.erase(0, prefix.size());
  }
  // go-md2man turns the title block into .TH; no date, so rebuilding gives the same page.
  out << "% TRAINWATCH 1 \"\" \"trainwatch " << TRAINWATCH_VERSION << "\" \"User Commands\"\n\n";
  out << "# NAME\n\n" << app.get_name() << " - " << Escape(summary) << "\n\n";
  out << "# SYNOPSIS\n\n**" << app.get_name() << "** *COMMAND* [*OPTIONS*]\n\n";
  out << "**" << app.get_name() << "** **--help** | **--version**\n\n";
  out << kDescription;
  out << "# OPTIONS\n\n";
  for (const auto* option :
       app.get_options([](const CLI::Option* option) { return !option->get_group().empty(); })) {
    WriteOption(*option, out);
  }
  out << "Each command also takes **-h**, **--help**.\n\n";
  out << "# COMMANDS\n\n";
  for (const auto* command :
       app.get_subcommands([](const CLI::App* sub) { return !Hidden(sub); })) {
    WriteCommand(*command, app.get_name() + " " + command->get_name(), out);
  }
  out << kProse;
}

}  // namespace trainwatch::cli
