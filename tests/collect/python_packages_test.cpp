// The job's Python packages without pip: a fake /proc for the ways a process says where its
// packages are (venv, PYTHONPATH, mapped libraries, a container's root), and a real
// interpreter in a real venv whose own importlib.metadata must agree with the listing.
#include "collect/python_packages.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "support/file_text.h"
#include "support/temp_dir.h"

namespace trainwatch::collect {
namespace {

using namespace std::chrono_literals;
using namespace std::string_literals;
using trainwatch::testing::ReadFile;
using trainwatch::testing::TempDir;

void WriteAt(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

void Distribution(const std::filesystem::path& dir, const std::string& name,
                  const std::string& version) {
  WriteAt(dir / (name + "-" + version + ".dist-info") / "METADATA",
          "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version +
              "\nSummary: x\n\nName: not-a-header\n");
}

// A fake /proc/<pid> whose root is `rootfs`.
class FakeProcess {
 public:
  FakeProcess(const TempDir& dir, int pid, const std::string& exe, const std::string& cmdline,
              const std::string& environment, const std::string& maps, const std::string& cwd)
      : proc_(dir.PathOf("proc")), rootfs_(dir.path() / "rootfs") {
    const std::filesystem::path folder = std::filesystem::path(proc_) / std::to_string(pid);
    std::filesystem::create_directories(folder);
    std::filesystem::create_directories(rootfs_);
    std::filesystem::create_directory_symlink(rootfs_, folder / "root");
    std::filesystem::create_symlink(exe, folder / "exe");
    std::filesystem::create_symlink(cwd, folder / "cwd");
    WriteAt(folder / "cmdline", cmdline);
    WriteAt(folder / "environ", environment);
    WriteAt(folder / "maps", maps);
  }
  const std::string& proc() const { return proc_; }
  const std::filesystem::path& rootfs() const { return rootfs_; }

 private:
  std::string proc_;
  std::filesystem::path rootfs_;
};

std::vector<std::string> DirsOf(const PythonSite& site) {
  std::vector<std::string> dirs;
  for (const auto& [dir, why] : site.dirs) {
    dirs.push_back(dir + " (" + why + ")");
  }
  return dirs;
}

TEST(PythonPackagesTest, AVenvWithPythonPathAndMappedLibrariesInItsOwnRoot) {
  TempDir dir;
  const FakeProcess process(
      dir, 100, "/usr/bin/python3.11", "/venv/bin/python\0train.py\0"s,
      "PATH=/usr/bin\0HOME=/home/u\0PYTHONPATH=/src:extra\0"s,
      "7f00-7f01 r-xp 00000000 08:01 12 /opt/conda/lib/python3.11/site-packages/torch/lib/"
      "libtorch.so\n7f01-7f02 r-xp 00000000 08:01 13 /usr/lib/x86_64-linux-gnu/libc.so.6\n",
      "/work");
  const std::filesystem::path& root = process.rootfs();
  WriteAt(root / "venv/pyvenv.cfg",
          "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.4\n");
  WriteAt(root / "venv/bin/python", "");
  Distribution(root / "venv/lib/python3.11/site-packages", "numpy", "1.26.4");
  std::filesystem::create_directories(root /
                                      "venv/lib/python3.11/site-packages/Foo_Bar-1.0.dist-info");
  WriteAt(root / "src/mylib.egg-info/PKG-INFO", "Name: MyLib\nVersion: 0.3.dev1\n");
  Distribution(root / "work/extra", "extra.pkg", "2");
  Distribution(root / "opt/conda/lib/python3.11/site-packages", "torch", "2.1.0");
  Distribution(root / "opt/conda/lib/python3.11/site-packages", "NumPy", "1.0");
  // The system's packages: a venv without system-site-packages does not see them.
  Distribution(root / "usr/lib/python3/dist-packages", "six", "1.16.0");
  Distribution(root / "home/u/.local/lib/python3.11/site-packages", "userpkg", "1");

  const std::optional<PythonSite> site = FindPythonSite(100, process.proc());
  ASSERT_TRUE(site);
  EXPECT_EQ(site->executable, "/venv/bin/python");
  EXPECT_EQ(site->real_executable, "/usr/bin/python3.11");
  EXPECT_EQ(site->venv, "/venv");
  EXPECT_EQ(DirsOf(*site),
            (std::vector<std::string>{"/src (PYTHONPATH)", "/work/extra (PYTHONPATH)",
                                      "/venv/lib/python3.11/site-packages (venv)",
                                      "/opt/conda/lib/python3.11/site-packages (mapped)"}));

  const std::vector<PythonPackage> packages = ListPythonPackages(site->root, site->dirs);
  std::vector<std::string> listed;
  listed.reserve(packages.size());
  for (const PythonPackage& package : packages) {
    listed.push_back(package.name + " " + package.version + " " + package.dir);
  }
  // The first of a name wins (numpy from the venv), as on sys.path; a dist-info without
  // METADATA is named by its folder.
  EXPECT_EQ(listed, (std::vector<std::string>{
                        "extra.pkg 2 /work/extra", "Foo_Bar 1.0 /venv/lib/python3.11/site-packages",
                        "MyLib 0.3.dev1 /src", "numpy 1.26.4 /venv/lib/python3.11/site-packages",
                        "torch 2.1.0 /opt/conda/lib/python3.11/site-packages"}));

  const CollectorResult result = CollectPythonPackages({100}, "", process.proc());
  EXPECT_EQ(result.status, CollectorStatus::kOk) << result.detail;
  ASSERT_EQ(result.artifacts.size(), 1u);
  EXPECT_EQ(result.artifacts[0].path, "python/packages.txt");
  const std::string& text = result.artifacts[0].content;
  EXPECT_NE(text.find("# pid 100: /venv/bin/python (/usr/bin/python3.11), venv /venv\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# 5 distributions\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\ntorch      2.1.0     /opt/conda/lib/python3.11/site-packages\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("six"), std::string::npos) << text;
}

// The daemon reads other users' trees as root: a link they plant is resolved in the
// process's root (an absolute one does not reach the daemon's files, ".." stops at the root),
// and what is not a regular file is never opened.
TEST(PythonPackagesTest, APlantedLinkNeverLeadsOutOfTheProcesssRoot) {
  TempDir dir;
  const FakeProcess process(dir, 11, "/usr/bin/python3.11", "/venv/bin/python\0x.py\0"s, "", "",
                            "/");
  const std::filesystem::path& root = process.rootfs();
  WriteAt(root / "venv/pyvenv.cfg",
          "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.2\n");
  const std::filesystem::path packages = root / "venv/lib/python3.11/site-packages";
  Distribution(packages, "fine", "1.0");
  // The daemon's own file, outside the process's root.
  const std::string secret = dir.Write("secret", "Name: leaked\nVersion: 6.6.6\n");
  std::filesystem::create_symlink(secret, packages / "absolute.egg-info");
  std::filesystem::create_symlink("../../../../../../../../../../.." + secret,
                                  packages / "dotdot.egg-info");
  std::filesystem::create_symlink("/dev/zero", packages / "device.egg-info");
  const CollectorResult result = CollectPythonPackages({11}, "", process.proc());
  ASSERT_EQ(result.status, CollectorStatus::kOk) << result.detail;
  const std::string& text = result.artifacts.at(0).content;
  EXPECT_EQ(text.find("leaked"), std::string::npos) << text;
  EXPECT_EQ(text.find("6.6.6"), std::string::npos) << text;
  EXPECT_NE(text.find("\nfine "), std::string::npos) << text;
}

// A venv without the key includes the system's packages (site.py's default), whatever case
// the value has; $VIRTUAL_ENV alone (a shell's) does not make the system interpreter a venv's.
TEST(PythonPackagesTest, VenvConfigReadAsSitePyReadsIt) {
  TempDir dir;
  const FakeProcess process(dir, 12, "/usr/bin/python3.11", "/v/bin/python3\0"s,
                            "VIRTUAL_ENV=/other\0"s, "", "/");
  const std::filesystem::path& root = process.rootfs();
  WriteAt(root / "v/pyvenv.cfg", "home = /opt/py/bin\nversion = 3.11.2\n");
  WriteAt(root / "v/bin/python3", "");
  WriteAt(root / "other/pyvenv.cfg", "include-system-site-packages = FALSE\n");
  Distribution(root / "v/lib/python3.11/site-packages", "inside", "1");
  Distribution(root / "opt/py/lib/python3.11/site-packages", "base", "2");
  const std::optional<PythonSite> site = FindPythonSite(12, process.proc());
  ASSERT_TRUE(site);
  EXPECT_EQ(site->venv, "/v");
  EXPECT_EQ(DirsOf(*site),
            (std::vector<std::string>{"/v/lib/python3.11/site-packages (venv)",
                                      "/opt/py/lib/python3.11/site-packages (base)"}));
}

TEST(PythonPackagesTest, TheSystemInterpreterSeesTheUserSiteAndDebianFolders) {
  TempDir dir;
  const FakeProcess process(dir, 7, "/usr/bin/python3.11", "python3\0-m\0app\0"s,
                            "PATH=/usr/local/bin:/usr/bin\0HOME=/home/u\0"s, "", "/");
  const std::filesystem::path& root = process.rootfs();
  WriteAt(root / "usr/bin/python3", "");
  Distribution(root / "usr/lib/python3/dist-packages", "six", "1.16.0");
  Distribution(root / "usr/local/lib/python3.11/dist-packages", "six", "1.17.0");
  Distribution(root / "home/u/.local/lib/python3.11/site-packages", "userpkg", "1");
  const std::optional<PythonSite> site = FindPythonSite(7, process.proc());
  ASSERT_TRUE(site);
  EXPECT_EQ(site->executable, "/usr/bin/python3");  // found on its PATH, as Python does
  EXPECT_EQ(site->venv, "");
  EXPECT_EQ(DirsOf(*site),
            (std::vector<std::string>{"/home/u/.local/lib/python3.11/site-packages (user site)",
                                      "/usr/local/lib/python3.11/dist-packages (base)",
                                      "/usr/lib/python3/dist-packages (base)"}));
  const std::vector<PythonPackage> packages = ListPythonPackages(site->root, site->dirs);
  ASSERT_EQ(packages.size(), 2u);
  EXPECT_EQ(packages[0].version, "1.17.0");  // /usr/local comes first
}

TEST(PythonPackagesTest, OnlyInterpretersAreListed) {
  TempDir dir;
  const FakeProcess shell(dir, 8, "/usr/bin/bash", "bash\0"s, "", "", "/");
  EXPECT_FALSE(FindPythonSite(8, shell.proc()));
  EXPECT_FALSE(FindPythonSite(9, shell.proc()));  // gone
  // An embedded interpreter says what it is by its libpython.
  const FakeProcess embedded(dir, 10, "/opt/app/bin/server", "server\0"s, "",
                             "7f-80 r-xp 0 08:01 1 /opt/app/lib/libpython3.12.so.1.0\n", "/");
  WriteAt(embedded.rootfs() / "opt/app/lib/python3.12/site-packages/x-1.dist-info/METADATA",
          "Name: x\nVersion: 1\n");
  const std::optional<PythonSite> site = FindPythonSite(10, embedded.proc());
  ASSERT_TRUE(site);
  EXPECT_EQ(DirsOf(*site),
            (std::vector<std::string>{"/opt/app/lib/python3.12/site-packages (base)"}));

  const CollectorResult none = CollectPythonPackages({8}, dir.PathOf("no-such-dir"), shell.proc());
  EXPECT_EQ(none.status, CollectorStatus::kSkipped);
  EXPECT_NE(none.detail.find("no python3 on the daemon's PATH"), std::string::npos);
}

// A real interpreter started from a real venv (with the system's packages): what it lists with
// its own importlib.metadata is what the collector lists, name for name and version for
// version, hundreds of distributions on a machine with python3-torch.
TEST(PythonPackagesTest, AgreesWithTheInterpretersOwnImportlibMetadata) {
  constexpr const char* kPython = "/usr/bin/python3";
  if (::access(kPython, X_OK) != 0) {
    GTEST_SKIP() << kPython << " is not installed";
  }
  TempDir dir;
  const std::string venv = dir.PathOf("venv");
  ASSERT_EQ(
      std::system(
          (kPython + " -m venv --without-pip --system-site-packages "s + venv + " 2>&1").c_str()),
      0);
  std::string site_packages;
  for (const auto& entry : std::filesystem::directory_iterator(venv + "/lib")) {
    site_packages = entry.path().string() + "/site-packages";
  }
  Distribution(site_packages, "tw_probe", "0.1");
  Distribution(dir.path() / "extra", "Extra.Pkg", "2.0");
  const std::string out = dir.PathOf("importlib.txt");
  const std::string script =
      "import importlib.metadata as m, re, time\n"
      "seen = {}\n"
      "for d in m.distributions():\n"
      "    name = d.metadata['Name']\n"
      "    if name: seen.setdefault(re.sub(r'[-_.]+', '-', name).lower(), d.version)\n"
      "open('" +
      out +
      ".tmp', 'w').write(''.join(f'{k} {v}\\n' for k, v in sorted(seen.items())))\n"
      "import os; os.rename('" +
      out + ".tmp', '" + out +
      "')\n"
      "time.sleep(60)\n";
  const std::string python = venv + "/bin/python3";
  const std::string pythonpath = "PYTHONPATH=" + dir.PathOf("extra");
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::chdir(dir.path().c_str());
    ::execle(python.c_str(), python.c_str(), "-c", script.c_str(), nullptr,
             std::vector<char*>{const_cast<char*>(pythonpath.c_str()), nullptr}.data());
    ::_exit(127);
  }
  for (int i = 0; i < 200 && !std::filesystem::exists(out); ++i) {
    std::this_thread::sleep_for(50ms);
  }
  const CollectorResult result = CollectPythonPackages({pid}, "");
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  ASSERT_TRUE(std::filesystem::exists(out));
  ASSERT_EQ(result.status, CollectorStatus::kOk) << result.detail;

  std::istringstream lines(result.artifacts.at(0).content);
  std::string line;
  std::set<std::string> ours;
  std::getline(lines, line);  // the interpreter
  std::getline(lines, line);  // its folders
  EXPECT_NE(line.find(site_packages + " (venv)"), std::string::npos) << line;
  std::getline(lines, line);  // the count
  std::getline(lines, line);  // the header
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string name;
    std::string version;
    fields >> name >> version;
    std::string normal;
    for (char c : name) {
      const bool separator = c == '-' || c == '_' || c == '.';
      if (!separator || normal.empty() || normal.back() != '-') {
        normal += separator ? '-' : static_cast<char>(std::tolower(c));
      }
    }
    ours.insert(normal + " " + version);
  }
  std::set<std::string> theirs;
  std::istringstream expected(ReadFile(out));
  while (std::getline(expected, line)) {
    theirs.insert(line);
  }
  EXPECT_EQ(ours, theirs);
  EXPECT_TRUE(theirs.count("tw-probe 0.1") == 1 && theirs.count("extra-pkg 2.0") == 1);
}

}  // namespace
}  // namespace trainwatch::collect
