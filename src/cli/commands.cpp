#include "cli/commands.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>
#include <system_error>
#include <thread>

#include "cli/cli_config.h"
#include "cli/scan_incidents.h"
#include "config/shipped_paths.h"
#include "core/unique_fd.h"
#include "core/usable_cores.h"
#include "detect/example_checker.h"
#include "detect/stream_scan.h"
#include "diagnose/stack_rules.h"
#include "incident/incident_replay.h"
#include "rules/compiled_rules.h"
#include "rules/line_matcher.h"
#include "rules/rule_loader.h"

namespace trainwatch::cli {
namespace {

// Loads the named rule paths (or the shipped packs); prints every error and returns
// nullopt when there are any.
std::optional<rules::LoadedRules> LoadOrReport(const std::vector<std::string>& requested,
                                               std::ostream& err) {
  std::vector<std::string> paths = requested;
  if (paths.empty()) {
    paths = config::DefaultRulePaths();
    if (paths.empty()) {
      err << "trainwatch: cannot find the shipped rule packs (looked next to the binary in "
             "../share/trainwatch/rules and in "
          << TRAINWATCH_SOURCE_RULES_DIR << "); name rule files with --rules\n";
      return std::nullopt;
    }
  }
  rules::LoadedRules loaded = rules::LoadRulePaths(paths);
  if (!loaded.errors.empty()) {
    for (const Diagnostic& error : loaded.errors) {
      err << FormatDiagnostic(error) << '\n';
    }
    err << "trainwatch: " << loaded.errors.size() << " problem"
        << (loaded.errors.size() == 1 ? "" : "s") << " in the rule files\n";
    return std::nullopt;
  }
  return loaded;
}

// Opens a file to scan: a regular file, a pipe or "-" (standard input, borrowed); not a
// directory.
Result<UniqueFd> OpenInput(const std::string& name) {
  if (name == "-") {
    return UniqueFd(STDIN_FILENO, /*owned=*/false);
  }
  UniqueFd fd(::open(name.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    return Error{std::strerror(errno)};
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) == 0 && S_ISDIR(info.st_mode)) {
    return Error{"is a directory"};
  }
  return fd;
}

}  // namespace

int RunCheck(const CheckOptions& options, std::ostream& out, std::ostream& err) {
  auto loaded = LoadOrReport(options.rule_paths, err);
  if (!loaded) {
    return kExitError;
  }
  std::vector<Diagnostic> notes;
  std::vector<Diagnostic> problems = detect::CheckExamples(loaded->rules, &notes);
  diagnose::CheckStackExamples(loaded->rules, problems);
  for (const Diagnostic& note : notes) {
    err << FormatDiagnostic(note) << '\n';
  }
  if (!problems.empty()) {
    for (const Diagnostic& problem : problems) {
      err << FormatDiagnostic(problem) << '\n';
    }
    err << "trainwatch: " << problems.size() << " example" << (problems.size() == 1 ? "" : "s")
        << " did not behave\n";
    return kExitError;
  }
  std::map<std::string, int> by_kind;
  std::map<rules::Cause, int> by_cause;
  std::size_t examples = 0;
  for (const rules::Rule& rule : loaded->rules) {
    ++by_kind[std::string(rules::RuleKindName(rule.kind))];
    ++by_cause[rule.verdict.cause];
    examples += rule.fires.size() + rule.quiet.size();
  }
  out << "trainwatch: " << loaded->rules.size() << " rules in " << loaded->files.size()
      << " files OK (";
  bool first = true;
  for (const auto& [kind, count] : by_kind) {
    out << (first ? "" : ", ") << count << ' ' << kind;
    first = false;
  }
  out << "); " << examples << " examples behave\n";
  // The verdicts, most specific cause first: what an operator's overrides changed shows here.
  out << "trainwatch: causes:";
  for (auto it = by_cause.rbegin(); it != by_cause.rend(); ++it) {
    out << (it == by_cause.rbegin() ? " " : ", ") << it->second << ' '
        << rules::CauseName(it->first);
  }
  out << '\n';
  // The rules whose lines tell of another process's failure: an operator who tunes them sees
  // which never make a summary or a first failing rank while a rank has an error of its own.
  for (const rules::Role role : {rules::Role::kConsequence, rules::Role::kReport}) {
    std::string ids;
    std::size_t count = 0;
    for (const rules::Rule& rule : loaded->rules) {
      if (rule.role == role) {
        ids += (count++ == 0 ? "" : ", ") + rule.id;
      }
    }
    if (count > 0) {
      out << "trainwatch: " << count << " rules with role " << rules::RoleName(role) << " ("
          << (role == rules::Role::kConsequence ? "what a rank suffers from another's failure"
                                                : "a launcher telling of a worker's failure")
          << "): " << ids << '\n';
    }
  }
  return kExitClean;
}

int RunScan(const ScanOptions& options, std::ostream& out, std::ostream& err) {
  if (options.files.empty()) {
    err << "trainwatch scan: name at least one file (or - for standard input)\n";
    return kExitError;
  }
  config::IncidentConfig grouping = options.incident;
  if (!options.config_path.empty()) {
    Result<config::DaemonConfig> config = LoadCliConfig(options.config_path, err);
    if (!config) {
      return kExitError;  // its problems are printed
    }
    grouping = config->incident;
  }
  auto loaded = LoadOrReport(options.rule_paths, err);
  if (!loaded) {
    return kExitError;
  }
  std::vector<Diagnostic> notes;
  auto compiled =
      rules::CompiledRules::Build(loaded->rules, options.tags, &notes, config::UserCacheDir());
  if (!compiled) {
    err << "trainwatch: " << compiled.error().message << '\n';
    return kExitError;
  }
  for (const Diagnostic& note : notes) {
    err << FormatDiagnostic(note) << '\n';
  }
  if ((*compiled)->rules().empty()) {
    std::string tags;
    for (const std::string& tag : options.tags) {
      tags += (tags.empty() ? "'" : ", '") + tag + "'";
    }
    err << "trainwatch: warning: no pattern or threshold rule has tag " << tags
        << ", so nothing can fire\n";
  }
  // Files are scanned at once, one per core: each has its own matcher (and so its own
  // Hyperscan scratch, which belongs to the thread that made it); what each prints waits for
  // the files before it, so the output reads as if they had been scanned in order.
  struct FileScan {
    std::ostringstream out;
    std::ostringstream err;
    bool fired = false;
    bool failed = false;
    bool fatal = false;                 // the matcher could not be made
    std::vector<detect::Event> events;  // for the replay, at most kMaxFiringsPerFile
    std::uint64_t events_left_out = 0;
  };
  std::vector<FileScan> scans(options.files.size());
  // The cores this process may run on (its affinity, which a container's cpuset narrows);
  // standard input is one stream, read by one thread: named at all, the files go in order.
  const bool reads_stdin =
      std::find(options.files.begin(), options.files.end(), "-") != options.files.end();
  const std::size_t workers =
      reads_stdin ? 1 : std::min(scans.size(), static_cast<std::size_t>(UsableCores()));
  const auto now = detect::TimePoint();  // a file is scanned as if it all arrived at once
  // A resolving rule's lines end a failure: printed, but they make no incident.
  std::set<std::string, std::less<>> resolving;
  for (const rules::Rule& rule : loaded->rules) {
    if (!rule.resolves.empty()) {
      resolving.insert(rule.id);
    }
  }
  auto scan_one = [&](std::size_t index) {
    const std::string& file = options.files[index];
    FileScan& scan = scans[index];
    // One file at a time prints as it goes (a log with a million warnings is not held).
    std::ostream& events = workers > 1 ? static_cast<std::ostream&>(scan.out) : out;
    auto fd = OpenInput(file);
    if (!fd) {
      scan.err << "trainwatch: " << file << ": " << fd.error().message << '\n';
      scan.failed = true;
      return;
    }
    auto matcher = rules::LineMatcher::Create(*compiled);
    if (!matcher) {
      scan.err << "trainwatch: " << matcher.error().message << '\n';
      scan.fatal = true;
      return;
    }
    source::LineFramer framer;
    detect::LineDetector detector(std::move(*matcher));
    const std::string shown = file == "-" ? "<stdin>" : file;
    Status status = ScanFd(fd->get(), framer, detector, now, [&](const detect::Event& event) {
      scan.fired = scan.fired || rules::IsAlarm(event.kind);
      PrintEvent(events, options.format, shown, event);
      if (resolving.contains(event.rule_id)) {
        return;
      }
      if (scan.events.size() < incident::IncidentReplay::kMaxFiringsPerFile) {
        scan.events.push_back(event);
      } else {
        ++scan.events_left_out;
      }
    });
    if (!status) {
      scan.err << "trainwatch: " << shown << ": read failed after line " << framer.lines_completed()
               << ": " << status.error().message << '\n';
      scan.failed = true;
    }
  };
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (i = next++) < scans.size();) {
      scan_one(i);
    }
  };
  std::vector<std::thread> helpers;
  try {
    for (std::size_t w = 1; w < workers; ++w) {
      helpers.emplace_back(work);
    }
  } catch (const std::system_error&) {
    // No thread to be had: the ones started and this one scan them all.
  }
  work();
  for (std::thread& helper : helpers) {
    helper.join();
  }
  bool failed = false;
  bool fired = false;
  std::size_t events = 0;
  // The answer the daemon would have given: the incidents these firings make.
  incident::IncidentReplay replay(grouping, options.now);
  for (std::size_t i = 0; i < scans.size(); ++i) {
    FileScan& scan = scans[i];
    out << scan.out.str();
    err << scan.err.str();
    if (scan.fatal) {
      return kExitError;
    }
    failed = failed || scan.failed;
    fired = fired || scan.fired;
    events += scan.events.size();
    const std::string shown = options.files[i] == "-" ? "<stdin>" : options.files[i];
    if (scan.events_left_out > 0) {
      err << "trainwatch: " << shown << ": only its first "
          << incident::IncidentReplay::kMaxFiringsPerFile << " firing lines make incidents; "
          << scan.events_left_out << " more are left out of them\n";
    }
    replay.AddFile(shown, scan.events);
  }
  if (events > 0) {
    PrintReplayedIncidents(out, options.format, replay.Finish());
  }
  out.flush();
  if (failed) {
    return kExitError;
  }
  return fired ? kExitFired : kExitClean;
}

}  // namespace trainwatch::cli
