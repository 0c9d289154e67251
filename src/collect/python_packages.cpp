#include "collect/python_packages.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string_view>

#include "collect/rooted_files.h"
#include "core/directory.h"
#include "core/proc_files.h"
#include "core/split.h"
#include "core/stopwatch.h"
#include "core/unique_fd.h"

namespace trainwatch::collect {
namespace {

// A METADATA file's headers come first; its long description (often most of it) is not read.
constexpr std::size_t kMetadataBytes = 16 * 1024;
// A job runs one interpreter, maybe a launcher's too: more distinct sites are not listed.
constexpr std::size_t kMaxSites = 8;

using Environ = std::map<std::string, std::string, std::less<>>;
using Dirs = std::vector<std::pair<std::string, std::string>>;

std::string Normal(const std::string& path) {
  std::string normal = std::filesystem::path(path).lexically_normal().string();
  while (normal.size() > 1 && normal.back() == '/') {
    normal.pop_back();
  }
  return normal;
}

std::string Parent(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : slash == 0 ? "/" : path.substr(0, slash);
}

std::string Base(const std::string& path) { return path.substr(path.rfind('/') + 1); }

std::string Join(const std::string& dir, const std::string& name) {
  if (!name.empty() && name.front() == '/') {
    return Normal(name);
  }
  return Normal(dir + "/" + name);
}

// "3.11" from "python3.11", "libpython3.11.so.1.0" or "3.11.2"; empty when none is there.
std::string MajorMinor(std::string_view text) {
  const std::size_t at = text.find("3.");
  if (at == std::string_view::npos) {
    return {};
  }
  std::size_t end = at + 2;
  while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) {
    ++end;
  }
  return end == at + 2 ? std::string() : std::string(text.substr(at, end - at));
}

Environ ParseEnviron(std::string_view raw) {
  Environ environ;
  ForEachPiece(raw, '\0', [&](std::string_view entry) {
    const std::size_t equals = entry.find('=');
    if (equals != std::string_view::npos) {
      environ.emplace(std::string(entry.substr(0, equals)), std::string(entry.substr(equals + 1)));
    }
  });
  return environ;
}

std::string Lookup(const Environ& environ, std::string_view name) {
  const auto found = environ.find(name);
  return found == environ.end() ? std::string() : found->second;
}

// "key = value" lines of a pyvenv.cfg.
std::map<std::string, std::string> ParseVenvConfig(const std::string& text) {
  std::map<std::string, std::string> values;
  ForEachPiece(text, '\n', [&](std::string_view line) {
    const std::size_t equals = line.find('=');
    if (equals == std::string_view::npos) {
      return;
    }
    auto trim = [](std::string_view piece) {
      while (!piece.empty() && std::isspace(static_cast<unsigned char>(piece.front()))) {
        piece.remove_prefix(1);
      }
      while (!piece.empty() && std::isspace(static_cast<unsigned char>(piece.back()))) {
        piece.remove_suffix(1);
      }
      return std::string(piece);
    };
    values[trim(line.substr(0, equals))] = trim(line.substr(equals + 1));
  });
  return values;
}

// The executable as Python itself works it out (sys.executable): argv[0] when it has a slash
// (from the process's working directory when relative), else the first match on its PATH.
std::string StartedAs(const RootedFiles& files, const std::string& argv0, const std::string& cwd,
                      const std::string& path_variable) {
  if (argv0.empty()) {
    return {};
  }
  if (argv0.find('/') != std::string::npos) {
    return cwd.empty() && argv0.front() != '/' ? std::string() : Join(cwd, argv0);
  }
  std::string found;
  ForEachPiece(path_variable.empty() ? std::string_view("/usr/local/bin:/usr/bin:/bin")
                                     : std::string_view(path_variable),
               ':', [&](std::string_view dir) {
                 if (found.empty() && !dir.empty() && dir.front() == '/' &&
                     files.IsFile(Join(std::string(dir), argv0))) {
                   found = Join(std::string(dir), argv0);
                 }
               });
  return found;
}

// The package folders below a Python installation's prefix, as its site.py adds them
// (Debian's dist-packages, everyone else's site-packages).
void AddBaseDirs(PythonSite& site, const std::string& prefix, const std::string& version) {
  std::vector<std::string> candidates;
  if (prefix == "/usr") {
    candidates.push_back("/usr/local/lib/python" + version + "/dist-packages");
  }
  candidates.push_back(prefix + "/lib/python3/dist-packages");
  candidates.push_back(prefix + "/lib/python" + version + "/dist-packages");
  candidates.push_back(prefix + "/lib/python" + version + "/site-packages");
  for (const std::string& dir : candidates) {
    site.dirs.emplace_back(Normal(dir), "base");
  }
}

// Fills `site.dirs` from what is known of the process (mapped folders may be empty), keeping
// those that exist, each once, in sys.path's order.
void ResolveDirs(PythonSite& site, const RootedFiles& files, const Environ& environ,
                 const std::string& cwd, const std::vector<std::string>& mapped,
                 std::string version) {
  // As CPython does: pyvenv.cfg beside the executable or one folder up ($VIRTUAL_ENV is only
  // a shell's, and means nothing to an interpreter started by its path).
  std::map<std::string, std::string> venv_config;
  for (const std::string& dir : {Parent(site.executable), Parent(Parent(site.executable))}) {
    if (!dir.empty() && files.IsFile(Join(dir, "pyvenv.cfg"))) {
      site.venv = Normal(dir);
      if (std::optional<std::string> text = files.Read(Join(dir, "pyvenv.cfg"), 64 * 1024)) {
        venv_config = ParseVenvConfig(*text);
      }
      break;
    }
  }
  if (version.empty() && venv_config.count("version") != 0) {
    version = MajorMinor(venv_config["version"]);
  }
  const std::string python_path = Lookup(environ, "PYTHONPATH");
  ForEachPiece(python_path, ':', [&](std::string_view entry) {
    if (!entry.empty() && (entry.front() == '/' || !cwd.empty())) {
      site.dirs.emplace_back(Join(cwd, std::string(entry)), "PYTHONPATH");
    }
  });
  bool system_site = true;
  // The installation's prefix: the folder above the real executable's, or for a venv the one
  // above pyvenv.cfg's `home` (a venv made with --copies has its own executable).
  std::string prefix = Parent(Parent(site.real_executable));
  if (!site.venv.empty()) {
    if (!version.empty()) {
      site.dirs.emplace_back(site.venv + "/lib/python" + version + "/site-packages", "venv");
    }
    // site.py: absent means "true"; the value's case does not matter.
    std::string include = venv_config.count("include-system-site-packages") != 0
                              ? venv_config["include-system-site-packages"]
                              : "true";
    std::transform(include.begin(), include.end(), include.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    system_site = include == "true";
    if (venv_config.count("home") != 0 && !venv_config["home"].empty()) {
      prefix = Parent(Normal(venv_config["home"]));
    }
  }
  if (system_site && !version.empty()) {
    const std::string user_base =
        !Lookup(environ, "PYTHONUSERBASE").empty()
            ? Lookup(environ, "PYTHONUSERBASE")
            : (Lookup(environ, "HOME").empty() ? std::string()
                                               : Join(Lookup(environ, "HOME"), ".local"));
    if (!user_base.empty() && Lookup(environ, "PYTHONNOUSERSITE").empty()) {
      site.dirs.emplace_back(Join(user_base, "lib/python" + version + "/site-packages"),
                             "user site");
    }
    AddBaseDirs(site, prefix, version);
  }
  for (const std::string& dir : mapped) {
    site.dirs.emplace_back(dir, "mapped");
  }
  std::set<std::string> seen;
  Dirs kept;
  for (auto& [dir, why] : site.dirs) {
    if (seen.insert(dir).second && files.IsDirectory(dir)) {
      kept.emplace_back(std::move(dir), std::move(why));
    }
  }
  site.dirs = std::move(kept);
}

// The site-/dist-packages folders the process has mapped files from, in the maps' order.
std::vector<std::string> MappedPackageDirs(const std::string& maps, std::string& libpython) {
  std::vector<std::string> dirs;
  ForEachPiece(maps, '\n', [&](std::string_view line) {
    const std::size_t slash = line.find('/');
    if (slash == std::string_view::npos) {
      return;
    }
    const std::string_view path = line.substr(slash);
    if (libpython.empty() && path.find("/libpython3.") != std::string_view::npos) {
      libpython = std::string(path);
    }
    for (std::string_view marker : {"/site-packages/", "/dist-packages/"}) {
      const std::size_t at = path.find(marker);
      if (at != std::string_view::npos) {
        std::string dir(path.substr(0, at + marker.size() - 1));
        if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) {
          dirs.push_back(std::move(dir));
        }
        return;
      }
    }
  });
  return dirs;
}

// PEP 503: case and runs of "-", "_", "." do not tell two distributions apart.
std::string NormalName(std::string_view name) {
  std::string normal;
  for (char c : name) {
    if (c == '-' || c == '_' || c == '.') {
      if (normal.empty() || normal.back() != '-') {
        normal += '-';
      }
    } else {
      normal += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return normal;
}

// Name and Version from the headers of a METADATA or PKG-INFO file.
void ReadHeaders(const std::string& text, PythonPackage& package) {
  bool done = false;
  ForEachPiece(text, '\n', [&](std::string_view line) {
    if (done || line.empty() || line == "\r") {
      done = true;
      return;
    }
    auto value = [&](std::string_view key) -> std::optional<std::string> {
      if (line.substr(0, key.size()) != key) {
        return std::nullopt;
      }
      std::string_view rest = line.substr(key.size());
      while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) {
        rest.remove_prefix(1);
      }
      while (!rest.empty() && (rest.back() == '\r' || rest.back() == ' ')) {
        rest.remove_suffix(1);
      }
      return std::string(rest);
    };
    if (auto name = value("Name:"); name && package.name.empty()) {
      package.name = *name;
    } else if (auto version = value("Version:"); version && package.version.empty()) {
      package.version = *version;
    }
  });
}

std::string Padded(const std::string& text, std::size_t width) {
  return text + std::string(width > text.size() ? width - text.size() : 0, ' ');
}

std::string Table(const std::vector<PythonPackage>& packages) {
  std::size_t name_width = 7;
  std::size_t version_width = 7;
  for (const PythonPackage& package : packages) {
    name_width = std::max(name_width, package.name.size());
    version_width = std::max(version_width, package.version.size());
  }
  std::string table =
      Padded("Package", name_width) + "  " + Padded("Version", version_width) + "  Folder\n";
  for (const PythonPackage& package : packages) {
    table += Padded(package.name, name_width) + "  " + Padded(package.version, version_width) +
             "  " + package.dir + "\n";
  }
  return table;
}

std::string SiteKey(const PythonSite& site, const std::string& namespace_link) {
  std::string key = namespace_link + "|" + site.executable + "|" + site.venv;
  for (const auto& [dir, why] : site.dirs) {
    key += "|" + dir;
  }
  return key;
}

std::string DescribeSite(const PythonSite& site, const std::vector<pid_t>& pids) {
  std::string text = "# ";
  if (pids.empty()) {
    text += "no Python process among the job's: the python3 on the daemon's PATH, ";
  } else {
    text += pids.size() == 1 ? "pid " : "pids ";
    for (std::size_t i = 0; i < pids.size(); ++i) {
      text += (i == 0 ? "" : ", ") + std::to_string(pids[i]);
    }
    text += ": ";
  }
  text += site.executable;
  if (site.real_executable != site.executable) {
    text += " (" + site.real_executable + ")";
  }
  if (!site.venv.empty()) {
    text += ", venv " + site.venv;
  }
  text += "\n# package folders in sys.path's order:";
  for (const auto& [dir, why] : site.dirs) {
    text += " " + dir + " (" + why + ")";
  }
  return text + (site.dirs.empty() ? " none found\n" : "\n");
}

}  // namespace

std::optional<PythonSite> FindPythonSite(pid_t pid, const std::string& proc_root) {
  PythonSite site;
  site.root = ProcPath(proc_root, pid, "root");
  Result<std::string> exe = ReadLinkAt(AT_FDCWD, ProcPath(proc_root, pid, "exe"));
  if (!exe) {
    return std::nullopt;
  }
  site.real_executable = *exe;
  std::string libpython;
  std::vector<std::string> mapped;
  if (Result<ProcText> maps = ReadProcFile(ProcPath(proc_root, pid, "maps"))) {
    mapped = MappedPackageDirs(maps->text, libpython);
  }
  const std::string exe_name = Base(site.real_executable);
  if (exe_name.rfind("python", 0) != 0 && libpython.empty()) {
    return std::nullopt;  // not an interpreter
  }
  std::string version = MajorMinor(exe_name);
  if (version.empty()) {
    version = MajorMinor(Base(libpython));
  }
  Environ environ;
  if (Result<ProcText> raw = ReadProcEnviron(pid, proc_root)) {
    environ = ParseEnviron(raw->text);
  }
  std::string argv0;
  if (Result<ProcText> cmdline = ReadProcCmdline(pid, proc_root)) {
    argv0 = cmdline->text.substr(0, cmdline->text.find('\0'));
  }
  Result<std::string> cwd = ReadLinkAt(AT_FDCWD, ProcPath(proc_root, pid, "cwd"));
  const RootedFiles files(site.root);
  site.executable = StartedAs(files, argv0, cwd ? *cwd : std::string(), Lookup(environ, "PATH"));
  if (site.executable.empty()) {
    site.executable = site.real_executable;
  }
  ResolveDirs(site, files, environ, cwd ? *cwd : std::string(), mapped, version);
  return site;
}

std::vector<PythonPackage> ListPythonPackages(const std::string& root, const Dirs& dirs) {
  const RootedFiles files(root);
  std::vector<PythonPackage> packages;
  std::set<std::string> seen;
  for (const auto& [dir, why] : dirs) {
    std::optional<DirPtr> opened = files.OpenDir(dir);
    if (!opened) {
      continue;
    }
    for (const std::string& name : DirNames(opened->get())) {
      std::string metadata;
      std::string stem;
      if (name.size() > 10 && name.ends_with(".dist-info")) {
        metadata = dir + "/" + name + "/METADATA";
        stem = name.substr(0, name.size() - 10);
      } else if (name.size() > 9 && name.ends_with(".egg-info")) {
        metadata = dir + "/" + name;
        if (files.IsDirectory(metadata)) {
          metadata += "/PKG-INFO";
        }
        stem = name.substr(0, name.size() - 9);
      } else {
        continue;
      }
      PythonPackage package;
      if (std::optional<std::string> text = files.Read(metadata, kMetadataBytes)) {
        ReadHeaders(*text, package);
      }
      // Without readable metadata, the folder's name says "name-version".
      const std::size_t dash = stem.find('-');
      if (package.name.empty()) {
        package.name = stem.substr(0, dash);
      }
      if (package.version.empty() && dash != std::string::npos) {
        package.version = stem.substr(dash + 1);
      }
      if (seen.insert(NormalName(package.name)).second) {
        package.dir = dir;
        packages.push_back(std::move(package));
      }
    }
  }
  std::sort(packages.begin(), packages.end(), [](const PythonPackage& a, const PythonPackage& b) {
    return NormalName(a.name) < NormalName(b.name);
  });
  return packages;
}

CollectorResult CollectPythonPackages(const std::vector<pid_t>& pids,
                                      const std::string& fallback_path,
                                      const std::string& proc_root) {
  CollectorResult result;
  result.name = "python_packages";
  const Stopwatch stopwatch;
  std::vector<PythonSite> sites;
  std::vector<std::vector<pid_t>> site_pids;
  std::vector<std::string> keys;
  for (pid_t pid : pids) {
    std::optional<PythonSite> site = FindPythonSite(pid, proc_root);
    if (!site) {
      continue;
    }
    Result<std::string> mount_namespace = ReadLinkAt(AT_FDCWD, ProcPath(proc_root, pid, "ns/mnt"));
    const std::string key = SiteKey(*site, mount_namespace ? *mount_namespace : std::string());
    const auto known = std::find(keys.begin(), keys.end(), key);
    if (known != keys.end()) {
      site_pids[static_cast<std::size_t>(known - keys.begin())].push_back(pid);
    } else if (sites.size() < kMaxSites) {
      keys.push_back(key);
      sites.push_back(std::move(*site));
      site_pids.push_back({pid});
    } else {
      AddDetail(result, "pid " + std::to_string(pid) + ": more than " + std::to_string(kMaxSites) +
                            " Python installations; not listed");
    }
  }
  if (sites.empty()) {
    // No Python process is known (a manual snapshot on the host): the python3 a shell here
    // would start, as `pip list` run by the daemon listed.
    PythonSite site;
    site.executable = StartedAs(RootedFiles(""), "python3", "", fallback_path);
    if (site.executable.empty()) {
      AddDetail(result, "no Python process among the job's, and no python3 on the daemon's PATH");
      Finish(result, stopwatch, 0, 0);
      return result;
    }
    std::error_code error;
    site.real_executable = std::filesystem::canonical(site.executable, error).string();
    if (error) {
      site.real_executable = site.executable;
    }
    ResolveDirs(site, RootedFiles(""), {}, "", {}, MajorMinor(Base(site.real_executable)));
    sites.push_back(std::move(site));
    site_pids.emplace_back();
  }
  std::string text;
  std::size_t listed = 0;
  for (std::size_t i = 0; i < sites.size(); ++i) {
    const std::vector<PythonPackage> packages = ListPythonPackages(sites[i].root, sites[i].dirs);
    text += (i == 0 ? "" : "\n") + DescribeSite(sites[i], site_pids[i]);
    text += "# " + std::to_string(packages.size()) + " distributions\n" + Table(packages);
    listed += packages.empty() ? 0 : 1;
  }
  AddText(result, "python/packages.txt", std::move(text));
  Finish(result, stopwatch, sites.size(), listed);
  return result;
}

}  // namespace trainwatch::collect
