#include "capture/gdb_python_helper.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>

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

const ElfLibrary* LoadElf() {
  static const std::optional<ElfLibrary> loaded = []() -> std::optional<ElfLibrary> {
    Result<SharedLibrary> dw = SharedLibrary::Open("libdw.so.1", "libdw1");
    ElfLibrary elf;
    // libdw links libelf: its functions are found through libdw's handle.
    if (!dw ||
        !(dw->Find("elf_version", elf.version) && dw->Find("elf_begin", elf.begin) &&
          dw->Find("elf_end", elf.end) && dw->Find("elf_kind", elf.kind) &&
          dw->Find("dwelf_elf_gnu_build_id", elf.build_id)) ||
        elf.version(EV_CURRENT) == EV_NONE) {
      return std::nullopt;
    }
    return elf;
  }();
  return loaded ? &*loaded : nullptr;
}

}  // namespace

std::string BuildIdOf(const std::string& path) {
  const ElfLibrary* lib = LoadElf();
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (lib == nullptr || fd.get() < 0) {
    return {};
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode)) {
    return {};  // a FIFO planted as an interpreter is never read
  }
  auto end = [lib](Elf* elf) { lib->end(elf); };
  // Read, not mapped: a file truncated by another client while mapped would be a SIGBUS.
  const std::unique_ptr<Elf, decltype(end)> elf(lib->begin(fd.get(), ELF_C_READ, nullptr), end);
  if (!elf || lib->kind(elf.get()) != ELF_K_ELF) {
    return {};
  }
  const void* id = nullptr;
  const ssize_t size = lib->build_id(elf.get(), &id);
  std::string hex;
  static constexpr std::string_view kDigits = "0123456789abcdef";
  for (ssize_t i = 0; i < size; ++i) {
    const auto byte = static_cast<const unsigned char*>(id)[i];
    hex += kDigits[byte >> 4];
    hex += kDigits[byte & 0xf];
  }
  return hex;
}

std::optional<std::string> TrustedPythonHelper(const std::string& exe, std::string& why,
                                               const PythonHelperDirs& dirs) {
  const std::string id = BuildIdOf(exe);
  if (id.empty()) {
    why = "its executable has no build id to match against this host's Python";
    return std::nullopt;
  }
  const std::filesystem::path helpers = std::filesystem::path(dirs.auto_load) /
                                        std::filesystem::path(dirs.interpreters).relative_path();
  std::error_code error;
  std::string untrusted;
  for (auto it = std::filesystem::directory_iterator(helpers, error);
       !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
    const std::string name = it->path().filename().string();
    constexpr std::string_view kSuffix = "-gdb.py";
    if (!name.starts_with("python") || !name.ends_with(kSuffix)) {
      continue;
    }
    const std::string interpreter =
        dirs.interpreters + "/" + name.substr(0, name.size() - kSuffix.size());
    if (BuildIdOf(interpreter) != id) {
      continue;
    }
    // Both must be out of every user's reach: the helper is run, the interpreter vouches.
    for (const std::string& path : {it->path().string(), interpreter}) {
      if (Result<std::string> trusted = CheckTrustedPath(path, 0); !trusted.ok()) {
        untrusted = trusted.error().message;
      }
    }
    if (!untrusted.empty()) {
      break;
    }
    return it->path().string();
  }
  why = !untrusted.empty() ? "the CPython helper for its interpreter is not root's alone (" +
                                 untrusted + "): not loaded"
                           : "its interpreter (build id " + id + ") is none of this host's " +
                                 dirs.interpreters + "/python3.X with a CPython helper in " +
                                 helpers.string() + " (python3.X-dbg installs it)";
  return std::nullopt;
}

}  // namespace trainwatch::capture
