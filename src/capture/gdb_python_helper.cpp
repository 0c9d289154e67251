#include "capture/gdb_python_helper.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "core/proc_files.h"
#include "core/shared_library.h"
#include "core/trusted_path.h"
#include "core/unique_fd.h"

namespace trainwatch::capture {
namespace {

// elfutils' libdw (and the libelf it brings), loaded at the first capture that needs it rather
// than linked (core/shared_library.h): a daemon reads a build id only when a job fails.
struct ElfLibrary {
  decltype(&elf_version) version = nullptr;
  decltype(&elf_begin) begin = nullptr;
  decltype(&elf_end) end = nullptr;
  decltype(&elf_kind) kind = nullptr;
  decltype(&dwelf_elf_gnu_build_id) build_id = nullptr;
};

Result<const ElfLibrary*> LoadElf() {
  static const Result<const ElfLibrary*> loaded = []() -> Result<const ElfLibrary*> {
    Result<SharedLibrary> dw = SharedLibrary::Open("libdw.so.1", "libdw1");
    if (!dw) {
      return dw.error();
    }
    static ElfLibrary elf;
    // libdw links libelf: its functions are found through libdw's handle.
    if (!(dw->Find("elf_version", elf.version) && dw->Find("elf_begin", elf.begin) &&
          dw->Find("elf_end", elf.end) && dw->Find("elf_kind", elf.kind) &&
          dw->Find("dwelf_elf_gnu_build_id", elf.build_id))) {
      return Error{dw->MissingError()};
    }
    if (elf.version(EV_CURRENT) == EV_NONE) {
      return Error{"libelf does not support this ELF version"};
    }
    return &elf;
  }();
  return loaded;
}

// An executable opened to read its build id: a regular file (a FIFO planted as one is never
// read), and its size, which tells cheaply that two files cannot be the same.
struct ElfFile {
  UniqueFd fd;
  off_t size = 0;
};

Result<ElfFile> OpenElf(const std::string& path) {
  ElfFile file{UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)), 0};
  struct stat info {};
  if (file.fd.get() < 0 || ::fstat(file.fd.get(), &info) != 0) {
    return Error{path + ": " + std::strerror(errno)};
  }
  if (!S_ISREG(info.st_mode)) {
    return Error{path + ": not a regular file"};
  }
  file.size = info.st_size;
  return file;
}

// Its GNU build id in hex; empty when it has none.
Result<std::string> BuildIdIn(const ElfFile& file) {
  Result<const ElfLibrary*> lib = LoadElf();
  if (!lib) {
    return lib.error();
  }
  auto end = [lib = *lib](Elf* elf) { lib->end(elf); };
  // Read, not mapped: a file truncated by another client while mapped would be a SIGBUS.
  const std::unique_ptr<Elf, decltype(end)> elf((*lib)->begin(file.fd.get(), ELF_C_READ, nullptr),
                                                end);
  if (!elf || (*lib)->kind(elf.get()) != ELF_K_ELF) {
    return std::string();
  }
  const void* id = nullptr;
  const ssize_t size = (*lib)->build_id(elf.get(), &id);
  std::string hex;
  static constexpr std::string_view kDigits = "0123456789abcdef";
  for (ssize_t i = 0; i < size; ++i) {
    const auto byte = static_cast<const unsigned char*>(id)[i];
    hex += kDigits[byte >> 4];
    hex += kDigits[byte & 0xf];
  }
  return hex;
}

// A helper and the interpreter it belongs to, both out of every user's reach, as resolved.
struct HelperCandidate {
  std::string helper;
  std::string interpreter;
};

// The host's helper for a container's own build of the same interpreter, when the image has
// that build's debug information for py-bt to read; else nullopt with `why` saying what to
// install where.
template <typename ReadId>
std::optional<std::string> ContainerHelper(const std::vector<HelperCandidate>& candidates,
                                           const ContainerInterpreter& container,
                                           const ReadId& read_id,
                                           const std::optional<std::string>& id, std::string& why) {
  const auto same_version =
      std::find_if(candidates.begin(), candidates.end(), [&](const HelperCandidate& candidate) {
        return std::filesystem::path(candidate.interpreter).filename() == container.name;
      });
  if (same_version == candidates.end()) {
    why = "it runs in a container with " + container.name +
          ", for which this host has no CPython helper (" + container.name +
          "-dbg on the host installs it)";
    return std::nullopt;
  }
  if (!read_id()) {
    return std::nullopt;
  }
  if (container.debug_dir.empty()) {
    why = "it runs in a container whose " + container.name + " (build id " + *id +
          ") has no debug information in its image: install " + container.name +
          "-dbg in the image";
    return std::nullopt;
  }
  return same_version->helper;
}

}  // namespace

std::string InterpreterNameOf(pid_t pid, const std::string& proc_root) {
  std::error_code error;
  const std::string exe =
      std::filesystem::read_symlink(ProcPath(proc_root, pid, "exe"), error).string();
  const std::size_t slash = exe.rfind('/');
  return error || exe.empty() ? "python3" : exe.substr(slash == std::string::npos ? 0 : slash + 1);
}

Result<std::string> BuildIdOf(const std::string& path) {
  Result<ElfFile> file = OpenElf(path);
  if (!file) {
    return file.error();
  }
  return BuildIdIn(*file);
}

std::optional<std::string> TrustedPythonHelper(const std::string& exe, std::string& why,
                                               const PythonHelperDirs& dirs,
                                               const ContainerInterpreter* container) {
  const std::filesystem::path helpers = std::filesystem::path(dirs.auto_load) /
                                        std::filesystem::path(dirs.interpreters).relative_path();
  // The helpers first, checked before anything of theirs is read: the helper is run, the
  // interpreter vouches for the rank's executable.
  std::vector<HelperCandidate> candidates;
  std::string untrusted;
  std::error_code error;
  for (auto it = std::filesystem::directory_iterator(helpers, error);
       !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
    const std::string name = it->path().filename().string();
    constexpr std::string_view kSuffix = "-gdb.py";
    if (!name.starts_with("python") || !name.ends_with(kSuffix)) {
      continue;
    }
    Result<std::string> helper = CheckTrustedPath(it->path().string(), 0);
    Result<std::string> interpreter =
        CheckTrustedPath(dirs.interpreters + "/" + name.substr(0, name.size() - kSuffix.size()), 0);
    if (!helper || !interpreter) {
      untrusted = (!helper ? helper : interpreter).error().message;
      continue;
    }
    candidates.push_back({std::move(*helper), std::move(*interpreter)});
  }
  const auto none_fits = [&] {
    why = "its interpreter is none of this host's " + dirs.interpreters +
          "/python3.X with a CPython helper in " + helpers.string() +
          " (python3.X-dbg installs it)";
    if (!untrusted.empty()) {
      why += "; a helper that is not root's alone was not considered (" + untrusted + ")";
    }
    return std::nullopt;
  };
  if (candidates.empty()) {
    return none_fits();  // the rank's executable (on a user's NFS, perhaps) is not opened
  }
  Result<ElfFile> rank = OpenElf(exe);
  if (!rank) {
    why = "its executable cannot be read (" + rank.error().message + ")";
    return std::nullopt;
  }
  std::optional<std::string> id;  // the rank's, read once a same-sized interpreter is found
  const auto read_id = [&]() -> bool {
    if (id) {
      return true;
    }
    Result<std::string> read = BuildIdIn(*rank);
    if (!read) {
      why = "its build id cannot be read: " + read.error().message;
      return false;
    }
    if (read->empty()) {
      why = "its executable has no build id to match against this host's Python";
      return false;
    }
    id = std::move(*read);
    return true;
  };
  for (const HelperCandidate& candidate : candidates) {
    Result<ElfFile> interpreter = OpenElf(candidate.interpreter);
    if (!interpreter || interpreter->size != rank->size) {
      continue;  // a copy of an interpreter has its size: the rank's ELF is parsed only then
    }
    if (!read_id()) {
      return std::nullopt;
    }
    if (Result<std::string> theirs = BuildIdIn(*interpreter); theirs && *theirs == *id) {
      return candidate.helper;
    }
  }
  if (container != nullptr) {
    return ContainerHelper(candidates, *container, read_id, id, why);
  }
  return none_fits();
}

}  // namespace trainwatch::capture
