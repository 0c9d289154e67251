// The packages of the job's own Python, listed without starting pip or any interpreter: the
// distributions' metadata (*.dist-info/METADATA, *.egg-info/PKG-INFO) read directly from the
// package directories of the training process's sys.path — its venv (pyvenv.cfg beside the
// executable it was started as), PYTHONPATH, the user site, the base installation's
// site-/dist-packages, and every site-packages directory it has mapped a file from (torch's
// libraries say where the job's packages are, whatever set the path up). Read through
// /proc/PID/root, so a process in a container is listed from its own file system. `pip list`
// took 1-5.5 s and saw the daemon's Python, not the job's; this takes milliseconds.
// Stateless and blocking (a few hundred small reads); any thread.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "collect/artifact.h"

namespace trainwatch::collect {

// Where one Python process finds its packages.
struct PythonSite {
  std::string root;        // its file system as this process reads it: "/proc/42/root"
  std::string executable;  // as the process was started: "/venv/bin/python" (else the real one)
  std::string real_executable;  // /proc/PID/exe: "/usr/bin/python3.11"
  std::string venv;             // the venv's folder, when it runs in one
  // The package folders in sys.path's order, as the process names them, each with why it is
  // there ("venv", "PYTHONPATH", "user site", "base", "mapped"); only those that exist.
  std::vector<std::pair<std::string, std::string>> dirs;
};

// The site of `pid` when it is a Python interpreter (its executable is python*, or it maps a
// libpython); nullopt for anything else or a process gone.
std::optional<PythonSite> FindPythonSite(pid_t pid, const std::string& proc_root = "/proc");

struct PythonPackage {
  std::string name;
  std::string version;
  std::string dir;  // the folder it was found in, as the process names it
};

// The distributions in `dirs` below `root` ("" for this file system), the first of each name
// (PEP 503 normalised) winning as in sys.path; sorted by name, case ignored.
std::vector<PythonPackage> ListPythonPackages(
    const std::string& root, const std::vector<std::pair<std::string, std::string>>& dirs);

// "python_packages": python/packages.txt, one section per distinct site of the Python
// processes among `pids` (name, version, folder); with no Python process among them, the
// site of the `python3` on `fallback_path` (the daemon's PATH), said so.
CollectorResult CollectPythonPackages(const std::vector<pid_t>& pids,
                                      const std::string& fallback_path,
                                      const std::string& proc_root = "/proc");

}  // namespace trainwatch::collect
