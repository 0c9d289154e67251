#include "collect/process_collectors.h"

#include <fcntl.h>
#include <re2/re2.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <optional>
#include <string_view>
#include <utility>

#include "collect/bundle_names.h"
#include "core/directory.h"
#include "core/proc_files.h"
#include "core/quantity.h"
#include "core/regex_options.h"
#include "core/split.h"
#include "core/stopwatch.h"

extern char** environ;  // NOLINT: the process environment, as POSIX names it

namespace trainwatch::collect {
namespace {

// "python3 train.py --lr 'a b'": each argument as a shell would need it to be pasted back.
std::string ShellQuote(std::string_view arg) {
  bool plain = !arg.empty() && std::all_of(arg.begin(), arg.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("@%+=:,./_-", c) != nullptr;
  });
  if (plain) {
    return std::string(arg);
  }
  std::string quoted = "'";
  for (char c : arg) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

// The folder of a live `pid`, named by its comm alone (its command line is not needed for
// that); a detail line and nullopt when it is gone.
std::optional<std::string> LiveProcessFolder(pid_t pid, const std::string& proc_root,
                                             CollectorResult& result) {
  Result<std::string> comm = ReadProcComm(pid, proc_root);
  if (!comm.ok()) {
    AddDetail(result, "pid " + std::to_string(pid) + ": " + comm.error().message + " (exited?)");
    return std::nullopt;
  }
  return ProcessFolder(pid, *comm);
}

}  // namespace

std::string JoinCmdline(std::string_view raw, bool quote) {
  if (!quote) {
    // Unquoted, an empty argument shows as nothing: empty ones at the end would leave only a
    // trailing space.
    while (raw.ends_with('\0')) {
      raw.remove_suffix(1);
    }
  }
  // Arguments end with a NUL each (a process that rewrote its argv may not); the final NUL
  // makes no empty argument, while one more does: ["a", ""] is "a\0\0".
  std::string joined;
  bool first = true;
  ForEachPiece(raw, '\0', [&](std::string_view arg) {
    if (!first) {
      joined += ' ';
    }
    first = false;
    joined += quote ? ShellQuote(arg) : std::string(arg);
  });
  return joined;
}

std::string ProcessFolder(pid_t pid, const std::string& comm) {
  std::string folder = "processes/" + std::to_string(pid);
  if (!comm.empty()) {
    // Appended in two steps: "-" + std::string trips GCC 12's false -Wrestrict (PR 105329).
    folder += '-';
    folder += SafeBundleName(comm);
  }
  return folder;
}

Result<ProcessInfo> DescribeProcess(pid_t pid, const std::string& proc_root) {
  Result<std::string> comm = ReadProcComm(pid, proc_root);
  if (!comm.ok()) {
    return Error{"pid " + std::to_string(pid) + ": " + comm.error().message};
  }
  ProcessInfo info;
  info.pid = pid;
  info.comm = std::move(*comm);
  // A cmdline that vanished after comm was read: the process exited; its comm still names it.
  if (Result<ProcText> cmdline = ReadProcCmdline(pid, proc_root); cmdline.ok()) {
    info.cmdline = JoinCmdline(cmdline->text, /*quote=*/false);
  }
  return info;
}

Result<std::vector<ProcessInfo>> FindProcesses(const std::string& pattern,
                                               const std::string& proc_root) {
  const RE2 regex(pattern, RegexOptions());
  if (!regex.ok()) {
    return Error{"process pattern '" + pattern + "': " + regex.error()};
  }
  std::vector<ProcessInfo> found;
  const pid_t self = ::getpid();
  const Status walked = ForEachProcess(proc_root, [&](int, int pid, const char*) {
    if (pid == self) {
      return;
    }
    Result<ProcessInfo> info = DescribeProcess(pid, proc_root);
    if (info.ok() && !info->cmdline.empty() && RE2::PartialMatch(info->cmdline, regex)) {
      found.push_back(std::move(*info));
    }
  });
  if (!walked) {
    return Error{proc_root + ": " + walked.error().message};
  }
  std::sort(found.begin(), found.end(),
            [](const ProcessInfo& a, const ProcessInfo& b) { return a.pid < b.pid; });
  return found;
}

CollectorResult CollectEnvironment(const std::vector<pid_t>& pids, const Redactor& redactor,
                                   RedactionCounts& counts, const std::string& proc_root) {
  const Stopwatch stopwatch;
  CollectorResult result;
  result.name = "environment";

  // The daemon's own, as it is now: what it passes to the commands it runs.
  std::string own;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    own += *entry;
    own += '\0';
  }
  AddText(result, "system/trainwatch-environ.txt", redactor.RedactEnvironment(own, counts),
          /*redact=*/false);

  std::size_t read = 0;
  for (pid_t pid : pids) {
    const std::optional<std::string> folder = LiveProcessFolder(pid, proc_root, result);
    if (!folder) {
      continue;
    }
    Result<ProcText> environ_text = ReadProcEnviron(pid, proc_root);
    if (!environ_text.ok()) {
      AddDetail(result, "pid " + std::to_string(pid) + ": " + environ_text.error().message);
      continue;
    }
    if (environ_text->text.empty()) {
      AddDetail(result, "pid " + std::to_string(pid) + ": empty environment (a zombie?)");
      continue;
    }
    if (environ_text->truncated) {
      result.truncated = true;
      AddDetail(result, "pid " + std::to_string(pid) + ": environment cut at " +
                            FormatByteSize(kMaxProcFileBytes));
    }
    AddText(result, *folder + "/environ.txt",
            redactor.RedactEnvironment(environ_text->text, counts), /*redact=*/false);
    ++read;
  }
  // The daemon's own environment always reads: judge by the processes when there are any.
  Finish(result, stopwatch, pids.empty() ? 1 : pids.size(), pids.empty() ? 1 : read);
  if (result.status == CollectorStatus::kFailed) {
    AddDetail(result, "no process environment could be read");
  }
  return result;
}

CollectorResult CollectProcesses(const std::vector<pid_t>& pids, const std::string& proc_root) {
  const Stopwatch stopwatch;
  CollectorResult result;
  result.name = "processes";
  std::size_t read = 0;
  for (pid_t pid : pids) {
    const std::optional<std::string> live = LiveProcessFolder(pid, proc_root, result);
    if (!live) {
      continue;
    }
    ++read;
    const std::string folder = *live + "/";
    const std::string where = "pid " + std::to_string(pid) + ": ";

    if (Result<ProcText> raw = ReadProcCmdline(pid, proc_root); raw.ok()) {
      AddText(result, folder + "cmdline.txt", JoinCmdline(raw->text, /*quote=*/true) + "\n");
    } else {
      AddDetail(result, where + raw.error().message);
    }
    for (const char* file : {"status", "limits"}) {
      if (Result<ProcText> text = ReadProcFile(ProcPath(proc_root, pid, file)); text.ok()) {
        AddText(result, folder + file + ".txt", std::move(text->text));
      } else {
        AddDetail(result, where + text.error().message);
      }
    }
    for (const char* link : {"cwd", "exe"}) {
      if (Result<std::string> target = ReadLinkAt(AT_FDCWD, ProcPath(proc_root, pid, link));
          target.ok()) {
        AddText(result, folder + link + ".txt", *target + "\n");
      } else {
        AddDetail(result, where + target.error().message);
      }
    }

    const std::string fd_dir = ProcPath(proc_root, pid, "fd");
    Result<DirPtr> fds = OpenDirAt(AT_FDCWD, fd_dir, /*follow=*/false);
    if (!fds.ok()) {
      AddDetail(result, where + fd_dir + ": " + fds.error().message);
      continue;
    }
    std::vector<std::pair<int, std::string>> open_files;
    for (const std::string& name : DirNames(fds->get())) {
      int fd = ParseDecimalName(name);
      if (fd < 0) {
        continue;
      }
      // A descriptor closed since readdir: not worth a detail line.
      if (Result<std::string> target = ReadLinkAt(::dirfd(fds->get()), name); target.ok()) {
        open_files.emplace_back(fd, *target);
      }
    }
    std::sort(open_files.begin(), open_files.end());
    std::string listing;
    for (const auto& [fd, target] : open_files) {
      listing += std::to_string(fd) + " -> " + target + "\n";
    }
    AddText(result, folder + "open-files.txt", std::move(listing));
  }
  Finish(result, stopwatch, pids.size(), read);
  if (pids.empty()) {
    result.detail = "no training processes";
  }
  return result;
}

}  // namespace trainwatch::collect
