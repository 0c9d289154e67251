#include "collect/system_facts.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>

#include "core/directory.h"
#include "core/proc_files.h"
#include "core/quantity.h"
#include "core/stopwatch.h"

namespace trainwatch::collect {
namespace {

std::string Governors(const std::string& sys_root) {
  const std::string cpu_dir = sys_root + "/devices/system/cpu";
  Result<DirPtr> dir = OpenDirAt(AT_FDCWD, cpu_dir, /*follow=*/true);
  if (!dir.ok()) {
    return "none (" + cpu_dir + ": " + dir.error().message + ")\n";
  }
  std::vector<int> cpus;
  for (const std::string& name : DirNames(dir->get())) {
    int cpu = name.starts_with("cpu") ? ParseDecimalName(std::string_view(name).substr(3)) : -1;
    if (cpu >= 0) {
      cpus.push_back(cpu);
    }
  }
  std::sort(cpus.begin(), cpus.end());
  std::string text;
  for (int cpu : cpus) {
    std::string path = cpu_dir + "/cpu" + std::to_string(cpu) + "/cpufreq/scaling_governor";
    Result<ProcText> governor = ReadProcFile(path, 256);
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
    return Error{std::string("getifaddrs: ") + std::strerror(errno)};
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
      // Appended in two steps: "/" + std::string trips GCC 12's false -Wrestrict (PR 105329).
      text += '/';
      text += std::to_string(prefix);
    }
    text += (entry->ifa_flags & IFF_UP) != 0 ? " up\n" : " down\n";
  }
  return text;
}

}  // namespace

CollectorResult CollectSystemFacts(const std::string& proc_root, const std::string& sys_root) {
  const Stopwatch stopwatch;
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
    Result<ProcText> text = ReadProcFile(proc_root + "/" + file);
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
           : Error{std::string("uname: ") + std::strerror(errno)});
  keep("system/cpu-governors.txt", Governors(sys_root));

  char host[HOST_NAME_MAX + 1] = {};
  keep("system/hostname.txt", ::gethostname(host, sizeof host - 1) == 0
                                  ? Result<std::string>(std::string(host) + "\n")
                                  : Error{std::string("gethostname: ") + std::strerror(errno)});
  keep("system/network.txt", Network());
  Finish(result, stopwatch, asked, read);
  return result;
}

CollectorResult CollectDiskUsage(const std::vector<std::string>& dirs) {
  const Stopwatch stopwatch;
  CollectorResult result;
  result.name = "disk_usage";
  std::size_t read = 0;
  std::string text;
  for (const std::string& dir : dirs) {
    struct statvfs fs {};
    if (::statvfs(dir.c_str(), &fs) != 0) {
      std::string line = dir + ": " + std::strerror(errno);
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
    text += dir + ": total " + FormatByteSize(total) + ", used " + FormatByteSize(used) + " (" +
            std::to_string(percent) + "%), free " + FormatByteSize(free) + ", avail " +
            FormatByteSize(avail) + "; bytes total=" + std::to_string(total) +
            " used=" + std::to_string(used) + " free=" + std::to_string(free) +
            " avail=" + std::to_string(avail) + "; inodes total=" + std::to_string(fs.f_files) +
            " used=" + std::to_string(inodes_used) + " free=" + std::to_string(fs.f_ffree) + "\n";
  }
  if (!dirs.empty()) {
    AddText(result, "system/disk-usage.txt", std::move(text));
  }
  Finish(result, stopwatch, dirs.size(), read);
  return result;
}

}  // namespace trainwatch::collect
