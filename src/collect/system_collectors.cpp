#include "collect/system_collectors.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <re2/re2.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <set>
#include <utility>

#include "core/unique_fd.h"

extern char** environ;  // NOLINT: the process environment, as POSIX names it

namespace trainwatch::collect {
namespace {

// /proc files report size 0; read them to EOF, up to this. A training job's environment can
// reach a few hundred KiB; cpuinfo of a 224-cpu host about 300 KiB.
constexpr std::size_t kMaxProcFileBytes = 4 << 20;
// How far past the cut a tail looks for the next line start.
constexpr std::size_t kLineStartWindow = 64 << 10;
constexpr int kMaxWalkDepth = 32;
constexpr std::size_t kMaxWalkEntries = 100000;
constexpr std::size_t kMaxListingEntries = 10000;
constexpr int kListingLevels = 2;
// Symlinks skipped are named in detail up to this many, then counted.
constexpr std::size_t kMaxNamedSkips = 20;

using SteadyClock = std::chrono::steady_clock;

std::string ErrnoText(int error) { return std::strerror(error); }

void AddDetail(CollectorResult& result, const std::string& line) {
  if (!result.detail.empty()) {
    result.detail += '\n';
  }
  result.detail += line;
}

void AddText(CollectorResult& result, std::string path, std::string content, bool redact = true) {
  Artifact artifact;
  artifact.path = std::move(path);
  artifact.content = std::move(content);
  artifact.redact = redact;
  result.artifacts.push_back(std::move(artifact));
}

void AddRange(CollectorResult& result, std::string path, std::string source_file,
              std::uint64_t offset, std::uint64_t length) {
  Artifact artifact;
  artifact.path = std::move(path);
  artifact.source_file = std::move(source_file);
  artifact.offset = offset;
  artifact.length = length;
  result.artifacts.push_back(std::move(artifact));
}

// Fills in what every collector reports the same way. `asked` and `read` count the things
// asked for (pids, files, dirs) and those that could be read: see the header's status rule.
void Finish(CollectorResult& result, SteadyClock::time_point start, std::size_t asked,
            std::size_t read) {
  result.bytes = 0;
  for (const Artifact& artifact : result.artifacts) {
    result.bytes += artifact.source_file.empty() ? artifact.content.size() : artifact.length;
  }
  if (asked == 0) {
    result.status = CollectorStatus::kSkipped;
    if (result.detail.empty()) {
      result.detail = "nothing to collect";
    }
  } else if (read == 0) {
    result.status = CollectorStatus::kFailed;
  } else {
    result.status = CollectorStatus::kOk;
  }
  result.duration_seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
}

struct FileText {
  std::string text;
  bool truncated = false;
};

// Reads a file to its end (or `cap` bytes). Works for /proc files, which report size 0.
// O_NONBLOCK: a FIFO planted where a file was expected must not hang a collector.
Result<FileText> ReadFile(const std::string& path, std::size_t cap = kMaxProcFileBytes) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) {
    return Error{path + ": " + ErrnoText(errno)};
  }
  FileText out;
  char buffer[16384];
  while (true) {
    ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return Error{path + ": " + ErrnoText(errno)};
    }
    if (n == 0) {
      break;
    }
    std::size_t room = cap - out.text.size();
    if (static_cast<std::size_t>(n) > room) {
      out.text.append(buffer, room);
      out.truncated = true;
      break;
    }
    out.text.append(buffer, static_cast<std::size_t>(n));
  }
  return out;
}

Result<std::string> ReadLinkAt(int dirfd, const std::string& path) {
  std::string target(PATH_MAX, '\0');
  ssize_t n = ::readlinkat(dirfd, path.c_str(), target.data(), target.size());
  if (n < 0) {
    return Error{path + ": " + ErrnoText(errno)};
  }
  target.resize(static_cast<std::size_t>(n));
  return target;
}

Result<std::string> ReadLink(const std::string& path) { return ReadLinkAt(AT_FDCWD, path); }

std::string ProcPath(const std::string& proc_root, pid_t pid, const char* file) {
  return proc_root + "/" + std::to_string(pid) + "/" + file;
}

// A decimal number as /proc names pids, descriptors and cpus; -1 for anything else.
int ParseNumber(std::string_view text) {
  if (text.empty() || text.size() > 9) {
    return -1;
  }
  int value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') {
      return -1;
    }
    value = value * 10 + (c - '0');
  }
  return value;
}

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

std::string JoinCmdline(std::string_view raw, bool quote) {
  // Arguments end with a NUL each; a process that rewrote its argv may not.
  if (!raw.empty() && raw.back() == '\0') {
    raw.remove_suffix(1);
  }
  std::string joined;
  std::size_t begin = 0;
  while (begin <= raw.size() && !raw.empty()) {
    std::size_t end = raw.find('\0', begin);
    if (end == std::string_view::npos) {
      end = raw.size();
    }
    std::string_view arg = raw.substr(begin, end - begin);
    if (!joined.empty() || begin > 0) {
      joined += ' ';
    }
    joined += quote ? ShellQuote(arg) : std::string(arg);
    begin = end + 1;
  }
  return joined;
}

std::string HumanBytes(std::uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  if (unit == 0) {
    std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(text, sizeof text, "%.1f %s", value, kUnits[unit]);
  }
  return text;
}

std::string UtcTime(std::time_t seconds) {
  std::tm tm{};
  ::gmtime_r(&seconds, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// Bundle names unique within one collector run: a clash gets "-2", "-3"... before the
// extension ("a.log", "a-2.log").
class UniqueNames {
 public:
  std::string Take(const std::string& name) {
    if (used_.insert(name).second) {
      return name;
    }
    std::size_t dot = name.rfind('.');
    if (dot == 0 || dot == std::string::npos) {
      dot = name.size();
    }
    for (int n = 2;; ++n) {
      std::string candidate = name.substr(0, dot) + "-" + std::to_string(n) + name.substr(dot);
      if (used_.insert(candidate).second) {
        return candidate;
      }
    }
  }

 private:
  std::set<std::string> used_;
};

// The first line start at or after `offset` in the open file, looking at most kLineStartWindow
// bytes ahead: `offset` itself when the byte before it is a newline. A line longer than the
// window, or the file's last line, is cut at `offset`; an unreadable window leaves `offset` as
// it is (the writer will record the problem when it copies).
std::uint64_t LineStartFrom(int fd, std::uint64_t offset, std::uint64_t size) {
  if (offset == 0 || offset >= size) {
    return offset;
  }
  std::string window(
      static_cast<std::size_t>(std::min<std::uint64_t>(kLineStartWindow + 1, size - offset + 1)),
      '\0');
  ssize_t n = ::pread(fd, window.data(), window.size(), static_cast<off_t>(offset - 1));
  if (n <= 0) {
    return offset;
  }
  std::size_t newline = std::string_view(window.data(), static_cast<std::size_t>(n)).find('\n');
  if (newline == std::string_view::npos) {
    return offset;
  }
  // window[0] is at offset - 1: the line starts right after the newline. A newline that ends
  // the file would leave an empty tail: the cut line is better than nothing.
  std::uint64_t line_start = offset + newline;
  return line_start < size ? line_start : offset;
}

// The tail range of an open regular file of `size` bytes: at most `budget` bytes, starting at
// a line start when it does not start at 0.
std::pair<std::uint64_t, std::uint64_t> TailRange(int fd, std::uint64_t size,
                                                  std::uint64_t budget) {
  if (size <= budget) {
    return {0, size};
  }
  std::uint64_t offset = LineStartFrom(fd, size - budget, size);
  return {offset, size - offset};
}

struct DirCloser {
  void operator()(DIR* dir) const { ::closedir(dir); }
};
using DirPtr = std::unique_ptr<DIR, DirCloser>;

// Opens `name` below `parent` as a directory, never through a symlink (O_NOFOLLOW: a directory
// swapped for a link to /etc after it was stat'ed fails with ELOOP).
Result<DirPtr> OpenDirAt(int parent, const std::string& name, bool follow) {
  int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW);
  int fd = ::openat(parent, name.c_str(), flags);
  if (fd < 0) {
    return Error{ErrnoText(errno)};
  }
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    int error = errno;
    ::close(fd);
    return Error{ErrnoText(error)};
  }
  return DirPtr(dir);
}

// The names in an open directory but "." and "..", sorted.
// The path with symlinks resolved: operators name paths through links (latest.log ->
// run-42.log), and the bundle writer opens sources with O_NOFOLLOW.
Result<std::string> RealPath(const std::string& path) {
  std::unique_ptr<char, decltype(&std::free)> real(::realpath(path.c_str(), nullptr), &std::free);
  if (!real) {
    return Error{ErrnoText(errno)};
  }
  return std::string(real.get());
}

std::vector<std::string> Names(DIR* dir) {
  std::vector<std::string> names;
  while (dirent* entry = ::readdir(dir)) {
    if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0) {
      names.emplace_back(entry->d_name);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

// What a skip list says: the first kMaxNamedSkips names, then a count.
void AddSkips(CollectorResult& result, const std::vector<std::string>& skipped,
              const std::string& what) {
  for (std::size_t i = 0; i < skipped.size() && i < kMaxNamedSkips; ++i) {
    AddDetail(result, what + ": " + skipped[i]);
  }
  if (skipped.size() > kMaxNamedSkips) {
    AddDetail(result, "... and " + std::to_string(skipped.size() - kMaxNamedSkips) + " more " +
                          what + " entries");
  }
}

}  // namespace

std::string SafeBundleName(std::string_view path) {
  while (true) {
    if (path.starts_with("/")) {
      path.remove_prefix(1);
    } else if (path.starts_with("./")) {
      path.remove_prefix(2);
    } else {
      break;
    }
  }
  std::string name;
  name.reserve(path.size());
  for (char c : path) {
    bool safe =
        std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' || c == '+';
    name += safe ? c : '_';
  }
  if (name.empty() || name == "." || name == "..") {
    return "unnamed";
  }
  return name;
}

std::string ProcessFolder(const ProcessInfo& process) {
  std::string folder = "processes/" + std::to_string(process.pid);
  if (!process.comm.empty()) {
    folder += "-" + SafeBundleName(process.comm);
  }
  return folder;
}

Result<ProcessInfo> DescribeProcess(pid_t pid, const std::string& proc_root) {
  Result<FileText> comm = ReadFile(ProcPath(proc_root, pid, "comm"));
  if (!comm.ok()) {
    return Error{"pid " + std::to_string(pid) + ": " + comm.error().message};
  }
  ProcessInfo info;
  info.pid = pid;
  info.comm = std::move(comm->text);
  while (!info.comm.empty() && info.comm.back() == '\n') {
    info.comm.pop_back();
  }
  // A cmdline that vanished after comm was read: the process exited; its comm still names it.
  if (Result<FileText> cmdline = ReadFile(ProcPath(proc_root, pid, "cmdline")); cmdline.ok()) {
    info.cmdline = JoinCmdline(cmdline->text, /*quote=*/false);
  }
  return info;
}

Result<std::vector<ProcessInfo>> FindProcesses(const std::string& pattern,
                                               const std::string& proc_root) {
  RE2::Options options;
  options.set_log_errors(false);
  RE2 regex(pattern, options);
  if (!regex.ok()) {
    return Error{"process pattern '" + pattern + "': " + regex.error()};
  }
  Result<DirPtr> dir = OpenDirAt(AT_FDCWD, proc_root, /*follow=*/true);
  if (!dir.ok()) {
    return Error{proc_root + ": " + dir.error().message};
  }
  std::vector<ProcessInfo> found;
  pid_t self = ::getpid();
  for (const std::string& name : Names(dir->get())) {
    pid_t pid = ParseNumber(name);
    if (pid <= 0 || pid == self) {
      continue;
    }
    Result<ProcessInfo> info = DescribeProcess(pid, proc_root);
    if (info.ok() && !info->cmdline.empty() && RE2::PartialMatch(info->cmdline, regex)) {
      found.push_back(std::move(*info));
    }
  }
  std::sort(found.begin(), found.end(),
            [](const ProcessInfo& a, const ProcessInfo& b) { return a.pid < b.pid; });
  return found;
}

CollectorResult CollectEnvironment(const std::vector<pid_t>& pids, const Redactor& redactor,
                                   RedactionCounts& counts, const std::string& proc_root) {
  SteadyClock::time_point start = SteadyClock::now();
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
    Result<ProcessInfo> info = DescribeProcess(pid, proc_root);
    if (!info.ok()) {
      AddDetail(result, info.error().message + " (exited?)");
      continue;
    }
    Result<FileText> environ_text = ReadFile(ProcPath(proc_root, pid, "environ"));
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
                            HumanBytes(kMaxProcFileBytes));
    }
    AddText(result, ProcessFolder(*info) + "/environ.txt",
            redactor.RedactEnvironment(environ_text->text, counts), /*redact=*/false);
    ++read;
  }
  // The daemon's own environment always reads: judge by the processes when there are any.
  Finish(result, start, pids.empty() ? 1 : pids.size(), pids.empty() ? 1 : read);
  if (result.status == CollectorStatus::kFailed) {
    AddDetail(result, "no process environment could be read");
  }
  return result;
}

CollectorResult CollectProcesses(const std::vector<pid_t>& pids, const std::string& proc_root) {
  SteadyClock::time_point start = SteadyClock::now();
  CollectorResult result;
  result.name = "processes";
  std::size_t read = 0;
  for (pid_t pid : pids) {
    Result<ProcessInfo> info = DescribeProcess(pid, proc_root);
    if (!info.ok()) {
      AddDetail(result, info.error().message + " (exited?)");
      continue;
    }
    ++read;
    const std::string folder = ProcessFolder(*info) + "/";
    const std::string where = "pid " + std::to_string(pid) + ": ";

    if (Result<FileText> raw = ReadFile(ProcPath(proc_root, pid, "cmdline")); raw.ok()) {
      AddText(result, folder + "cmdline.txt", JoinCmdline(raw->text, /*quote=*/true) + "\n");
    } else {
      AddDetail(result, where + raw.error().message);
    }
    for (const char* file : {"status", "limits"}) {
      if (Result<FileText> text = ReadFile(ProcPath(proc_root, pid, file)); text.ok()) {
        AddText(result, folder + file + ".txt", std::move(text->text));
      } else {
        AddDetail(result, where + text.error().message);
      }
    }
    for (const char* link : {"cwd", "exe"}) {
      if (Result<std::string> target = ReadLink(ProcPath(proc_root, pid, link)); target.ok()) {
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
    for (const std::string& name : Names(fds->get())) {
      int fd = ParseNumber(name);
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
  Finish(result, start, pids.size(), read);
  if (pids.empty()) {
    result.detail = "no training processes";
  }
  return result;
}

namespace {

std::string Governors(const std::string& sys_root) {
  const std::string cpu_dir = sys_root + "/devices/system/cpu";
  Result<DirPtr> dir = OpenDirAt(AT_FDCWD, cpu_dir, /*follow=*/true);
  if (!dir.ok()) {
    return "none (" + cpu_dir + ": " + dir.error().message + ")\n";
  }
  std::vector<int> cpus;
  for (const std::string& name : Names(dir->get())) {
    int cpu = name.starts_with("cpu") ? ParseNumber(std::string_view(name).substr(3)) : -1;
    if (cpu >= 0) {
      cpus.push_back(cpu);
    }
  }
  std::sort(cpus.begin(), cpus.end());
  std::string text;
  for (int cpu : cpus) {
    std::string path = cpu_dir + "/cpu" + std::to_string(cpu) + "/cpufreq/scaling_governor";
    Result<FileText> governor = ReadFile(path, 256);
    std::string value = governor.ok() ? governor->text : "";
    while (!value.empty() && (value.back() == '\n' || value.back() == ' ')) {
      value.pop_back();
    }
    text += "cpu" + std::to_string(cpu) + ": " + (value.empty() ? "none" : value) + "\n";
  }
  return text.empty() ? "none (no cpus listed in " + cpu_dir + ")\n" : text;
}

std::string HumanUptime(const std::string& proc_uptime) {
  double seconds = std::strtod(proc_uptime.c_str(), nullptr);
  auto total = static_cast<long long>(seconds);
  char text[96];
  std::snprintf(text, sizeof text, "up %lld days, %02lld:%02lld:%02lld\n", total / 86400,
                total % 86400 / 3600, total % 3600 / 60, total % 60);
  return text;
}

Result<std::string> Network() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) {
    return Error{std::string("getifaddrs: ") + ErrnoText(errno)};
  }
  std::unique_ptr<ifaddrs, void (*)(ifaddrs*)> owner(list, ::freeifaddrs);
  std::string text;
  for (ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr) {
      continue;
    }
    int family = entry->ifa_addr->sa_family;
    const void* address = nullptr;
    const unsigned char* mask = nullptr;
    std::size_t mask_bytes = 0;
    if (family == AF_INET) {
      address = &reinterpret_cast<const sockaddr_in*>(entry->ifa_addr)->sin_addr;
      if (entry->ifa_netmask != nullptr) {
        mask = reinterpret_cast<const unsigned char*>(
            &reinterpret_cast<const sockaddr_in*>(entry->ifa_netmask)->sin_addr);
        mask_bytes = 4;
      }
    } else if (family == AF_INET6) {
      address = &reinterpret_cast<const sockaddr_in6*>(entry->ifa_addr)->sin6_addr;
      if (entry->ifa_netmask != nullptr) {
        mask = reinterpret_cast<const unsigned char*>(
            &reinterpret_cast<const sockaddr_in6*>(entry->ifa_netmask)->sin6_addr);
        mask_bytes = 16;
      }
    } else {
      continue;  // AF_PACKET and friends: link-level, not addresses
    }
    char buffer[INET6_ADDRSTRLEN] = {};
    if (::inet_ntop(family, address, buffer, sizeof buffer) == nullptr) {
      continue;
    }
    text +=
        std::string(entry->ifa_name) + " " + (family == AF_INET ? "inet" : "inet6") + " " + buffer;
    if (mask != nullptr) {
      int prefix = 0;
      for (std::size_t i = 0; i < mask_bytes; ++i) {
        prefix += std::popcount(static_cast<unsigned>(mask[i]));
      }
      text += "/" + std::to_string(prefix);
    }
    text += (entry->ifa_flags & IFF_UP) != 0 ? " up\n" : " down\n";
  }
  return text;
}

}  // namespace

CollectorResult CollectSystemFacts(const std::string& proc_root, const std::string& sys_root) {
  SteadyClock::time_point start = SteadyClock::now();
  CollectorResult result;
  result.name = "system";
  std::size_t asked = 0;
  std::size_t read = 0;
  auto keep = [&](const std::string& path, Result<std::string> text) {
    ++asked;
    if (text.ok()) {
      ++read;
      AddText(result, path, std::move(*text));
    } else {
      AddDetail(result, text.error().message);
    }
  };
  auto proc_file = [&](const char* file) -> Result<std::string> {
    Result<FileText> text = ReadFile(proc_root + "/" + file);
    if (!text.ok()) {
      return text.error();
    }
    result.truncated = result.truncated || text->truncated;
    return std::move(text->text);
  };
  keep("system/cpuinfo.txt", proc_file("cpuinfo"));
  keep("system/meminfo.txt", proc_file("meminfo"));
  keep("system/loadavg.txt", proc_file("loadavg"));
  Result<std::string> uptime = proc_file("uptime");
  keep("system/uptime.txt",
       uptime.ok() ? Result<std::string>(*uptime + HumanUptime(*uptime)) : uptime);

  utsname names{};
  keep("system/kernel.txt",
       ::uname(&names) == 0
           ? Result<std::string>(std::string(names.sysname) + " " + names.nodename + " " +
                                 names.release + " " + names.version + " " + names.machine + "\n")
           : Error{std::string("uname: ") + ErrnoText(errno)});
  keep("system/cpu-governors.txt", Governors(sys_root));

  char host[HOST_NAME_MAX + 1] = {};
  keep("system/hostname.txt", ::gethostname(host, sizeof host - 1) == 0
                                  ? Result<std::string>(std::string(host) + "\n")
                                  : Error{std::string("gethostname: ") + ErrnoText(errno)});
  keep("system/network.txt", Network());
  Finish(result, start, asked, read);
  return result;
}

CollectorResult CollectDiskUsage(const std::vector<std::string>& dirs) {
  SteadyClock::time_point start = SteadyClock::now();
  CollectorResult result;
  result.name = "disk_usage";
  std::size_t read = 0;
  std::string text;
  for (const std::string& dir : dirs) {
    struct statvfs fs {};
    if (::statvfs(dir.c_str(), &fs) != 0) {
      std::string line = dir + ": " + ErrnoText(errno);
      text += line + "\n";
      AddDetail(result, line);
      continue;
    }
    ++read;
    std::uint64_t unit = fs.f_frsize != 0 ? fs.f_frsize : fs.f_bsize;
    std::uint64_t total = fs.f_blocks * unit;
    std::uint64_t free = fs.f_bfree * unit;
    std::uint64_t avail = fs.f_bavail * unit;
    std::uint64_t used = total - free;
    // As df counts it: used out of what non-root users can have.
    std::uint64_t percent =
        used + avail == 0 ? 0 : (used * 100 + used + avail - 1) / (used + avail);
    std::uint64_t inodes_used = fs.f_files - fs.f_ffree;
    text += dir + ": total " + HumanBytes(total) + ", used " + HumanBytes(used) + " (" +
            std::to_string(percent) + "%), free " + HumanBytes(free) + ", avail " +
            HumanBytes(avail) + "; bytes total=" + std::to_string(total) +
            " used=" + std::to_string(used) + " free=" + std::to_string(free) +
            " avail=" + std::to_string(avail) + "; inodes total=" + std::to_string(fs.f_files) +
            " used=" + std::to_string(inodes_used) + " free=" + std::to_string(fs.f_ffree) + "\n";
  }
  if (!dirs.empty()) {
    AddText(result, "system/disk-usage.txt", std::move(text));
  }
  Finish(result, start, dirs.size(), read);
  return result;
}

CollectorResult CollectLogTails(const std::vector<std::string>& files, std::uint64_t tail_bytes) {
  SteadyClock::time_point start = SteadyClock::now();
  CollectorResult result;
  result.name = "log_tails";
  UniqueNames names;
  std::size_t read = 0;
  for (const std::string& file : files) {
    // The operator named this path, so a symlink (latest.log -> run-42.log) is theirs to name:
    // resolve it, since the writer opens the source with O_NOFOLLOW.
    Result<std::string> real = RealPath(file);
    if (!real) {
      AddDetail(result, file + ": " + real.error().message);
      continue;
    }
    UniqueFd fd(::open(real->c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW));
    struct stat st {};
    if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0) {
      AddDetail(result, file + ": " + ErrnoText(errno));
      continue;
    }
    if (!S_ISREG(st.st_mode)) {
      AddDetail(result, file + ": not a regular file");
      continue;
    }
    ++read;
    auto size = static_cast<std::uint64_t>(st.st_size);
    auto [offset, length] = TailRange(fd.get(), size, tail_bytes);
    result.truncated = result.truncated || offset > 0;
    AddRange(result, "logs/" + names.Take(SafeBundleName(file)), *real, offset, length);
  }
  Finish(result, start, files.size(), read);
  return result;
}

namespace {

struct FoundFile {
  std::string relative;
  std::uint64_t size = 0;
  timespec mtime{};
};

struct Walk {
  std::vector<FoundFile> files;
  std::vector<std::string> symlinks;
  std::vector<std::string> unreadable;
  std::size_t others = 0;  // sockets, FIFOs, devices
  std::size_t entries = 0;
  bool cut = false;  // depth or entry limit reached
};

// Records every regular file below the open directory `dir`, whose path relative to the top
// is `relative` ("" for the top). Symlinks are recorded as skipped, never followed.
void WalkDirectory(DIR* dir, const std::string& relative, int depth, Walk& walk) {
  for (const std::string& name : Names(dir)) {
    if (++walk.entries > kMaxWalkEntries) {
      walk.cut = true;
      return;
    }
    std::string path = relative.empty() ? name : relative + "/" + name;
    struct stat st {};
    if (::fstatat(::dirfd(dir), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      walk.unreadable.push_back(path + ": " + ErrnoText(errno));
    } else if (S_ISLNK(st.st_mode)) {
      walk.symlinks.push_back(path);
    } else if (S_ISREG(st.st_mode)) {
      walk.files.push_back({path, static_cast<std::uint64_t>(st.st_size), st.st_mtim});
    } else if (S_ISDIR(st.st_mode)) {
      if (depth + 1 >= kMaxWalkDepth) {
        walk.cut = true;
        continue;
      }
      Result<DirPtr> child = OpenDirAt(::dirfd(dir), name, /*follow=*/false);
      if (!child.ok()) {
        walk.unreadable.push_back(path + ": " + child.error().message);
        continue;
      }
      WalkDirectory(child->get(), path, depth + 1, walk);
    } else {
      ++walk.others;
    }
  }
}

}  // namespace

CollectorResult CollectDirectory(const std::string& name, const std::string& dir,
                                 const std::string& prefix, std::uint64_t max_bytes) {
  SteadyClock::time_point start = SteadyClock::now();
  CollectorResult result;
  result.name = name;
  Walk walk;
  {
    Result<DirPtr> top = OpenDirAt(AT_FDCWD, dir, /*follow=*/true);
    if (!top.ok()) {
      struct stat st {};
      bool missing = ::stat(dir.c_str(), &st) != 0 && errno == ENOENT;
      Finish(result, start, 1, 0);
      result.status = missing ? CollectorStatus::kMissing : CollectorStatus::kFailed;
      result.detail = dir + ": " + top.error().message;
      return result;
    }
    WalkDirectory(top->get(), "", 0, walk);
  }

  std::sort(walk.files.begin(), walk.files.end(), [](const FoundFile& a, const FoundFile& b) {
    if (a.mtime.tv_sec != b.mtime.tv_sec) {
      return a.mtime.tv_sec > b.mtime.tv_sec;
    }
    if (a.mtime.tv_nsec != b.mtime.tv_nsec) {
      return a.mtime.tv_nsec > b.mtime.tv_nsec;
    }
    return a.relative < b.relative;
  });
  std::uint64_t left = max_bytes;
  std::size_t i = 0;
  for (; i < walk.files.size(); ++i) {
    const FoundFile& file = walk.files[i];
    std::string source = dir + "/" + file.relative;
    if (file.size <= left) {
      AddRange(result, prefix + "/" + file.relative, source, 0, file.size);
      left -= file.size;
      continue;
    }
    // The file crossing the cap: its newest lines, up to what is left, then stop (older files
    // would only be older). Opened without following, like the walk.
    UniqueFd fd(::open(source.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW));
    if (fd.get() >= 0 && left > 0) {
      auto [offset, length] = TailRange(fd.get(), file.size, left);
      if (length > 0 && length <= left) {
        AddRange(result, prefix + "/" + file.relative, source, offset, length);
        AddDetail(result, "kept the last " + std::to_string(length) + " of " +
                              std::to_string(file.size) + " bytes of " + file.relative + " (cap " +
                              HumanBytes(max_bytes) + ")");
        result.truncated = true;
        ++i;
      }
    }
    break;
  }
  if (i < walk.files.size()) {
    result.truncated = true;
    AddDetail(result, "left out " + std::to_string(walk.files.size() - i) +
                          " older file(s) over the cap of " + HumanBytes(max_bytes));
  }
  AddSkips(result, walk.symlinks, "skipped symlink (not followed)");
  AddSkips(result, walk.unreadable, "unreadable");
  if (walk.others > 0) {
    AddDetail(result, "skipped " + std::to_string(walk.others) + " special file(s)");
  }
  if (walk.cut) {
    AddDetail(result, "walk stopped at " + std::to_string(kMaxWalkDepth) + " levels or " +
                          std::to_string(kMaxWalkEntries) + " entries");
    result.truncated = true;
  }
  // An empty directory read fine; one whose every entry failed did not.
  std::size_t asked = 1;
  std::size_t read = walk.files.empty() && !walk.unreadable.empty() ? 0 : 1;
  Finish(result, start, asked, read);
  return result;
}

namespace {

// The listing of an open directory, `levels` deep: "type size mtime path" per entry.
void ListDirectory(DIR* dir, const std::string& relative, int level, std::string& text,
                   std::size_t& entries, bool& cut) {
  for (const std::string& name : Names(dir)) {
    if (entries >= kMaxListingEntries) {
      cut = true;
      return;
    }
    ++entries;
    std::string path = relative.empty() ? name : relative + "/" + name;
    struct stat st {};
    if (::fstatat(::dirfd(dir), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      text += "? " + path + ": " + ErrnoText(errno) + "\n";
      continue;
    }
    char type = S_ISREG(st.st_mode)   ? 'f'
                : S_ISDIR(st.st_mode) ? 'd'
                : S_ISLNK(st.st_mode) ? 'l'
                                      : 'o';
    char size[24];
    std::snprintf(size, sizeof size, "%15llu", static_cast<unsigned long long>(st.st_size));
    text += std::string(1, type) + " " + size + " " + UtcTime(st.st_mtim.tv_sec) + " " + path;
    if (S_ISLNK(st.st_mode)) {
      Result<std::string> target = ReadLinkAt(::dirfd(dir), name);
      text += " -> " + (target.ok() ? *target : "?");
    }
    if (S_ISDIR(st.st_mode)) {
      text += "/";
    }
    text += "\n";
    if (S_ISDIR(st.st_mode) && level < kListingLevels) {
      Result<DirPtr> child = OpenDirAt(::dirfd(dir), name, /*follow=*/false);
      if (child.ok()) {
        ListDirectory(child->get(), path, level + 1, text, entries, cut);
      } else {
        text += "? " + path + "/: " + child.error().message + "\n";
      }
    }
  }
}

}  // namespace

CollectorResult CollectPaths(const std::vector<std::string>& paths,
                             std::uint64_t max_bytes_per_file) {
  SteadyClock::time_point start = SteadyClock::now();
  CollectorResult result;
  result.name = "extra_paths";
  UniqueNames names;
  std::size_t read = 0;
  for (const std::string& path : paths) {
    Result<std::string> real = RealPath(path);
    struct stat st {};
    if (!real || ::stat(real->c_str(), &st) != 0) {
      AddDetail(result, path + ": " + (real ? ErrnoText(errno) : real.error().message));
      continue;
    }
    if (S_ISREG(st.st_mode)) {
      ++read;
      auto size = static_cast<std::uint64_t>(st.st_size);
      if (size > max_bytes_per_file) {
        result.truncated = true;
        AddDetail(result, path + ": kept the first " + HumanBytes(max_bytes_per_file) + " of " +
                              HumanBytes(size));
      }
      AddRange(result, "extra/" + names.Take(SafeBundleName(path)), *real, 0,
               std::min(size, max_bytes_per_file));
    } else if (S_ISDIR(st.st_mode)) {
      Result<DirPtr> dir = OpenDirAt(AT_FDCWD, *real, /*follow=*/true);
      if (!dir.ok()) {
        AddDetail(result, path + ": " + dir.error().message);
        continue;
      }
      ++read;
      std::string text = "# " + path +
                         ": type (f file, d directory, l symlink, o other), size, "
                         "mtime (UTC), path; " +
                         std::to_string(kListingLevels) + " levels\n";
      std::size_t entries = 0;
      bool cut = false;
      ListDirectory(dir->get(), "", 1, text, entries, cut);
      if (cut) {
        text += "# cut at " + std::to_string(kMaxListingEntries) + " entries\n";
        result.truncated = true;
        AddDetail(result,
                  path + ": listing cut at " + std::to_string(kMaxListingEntries) + " entries");
      }
      AddText(result, "extra/" + names.Take(SafeBundleName(path) + ".listing.txt"),
              std::move(text));
    } else {
      AddDetail(result, path + ": neither a file nor a directory");
    }
  }
  Finish(result, start, paths.size(), read);
  return result;
}

}  // namespace trainwatch::collect
