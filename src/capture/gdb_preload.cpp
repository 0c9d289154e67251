#include "capture/gdb_preload.h"

#include <charconv>

namespace trainwatch::capture {
namespace {

// Kept to what gdb 13's Python (3.11 on Debian 12) has; every step is guarded, so that a
// failure costs speed (gdb reads the library itself after the attach), never a stack.
constexpr std::string_view kPreload = R"PY(
import os, re, stat, struct, time
import gdb

TRAINWATCH_SAFE_PATH = re.compile(r"^/[A-Za-z0-9_./+-]+$")
TRAINWATCH_MAX_LIBRARIES = 2048
TRAINWATCH_MAX_MAPS_BYTES = 8 << 20

def trainwatch_load_bias(fd, start):
    """Where the library whose first page is mapped at `start` was loaded, or None."""
    header = os.pread(fd, 64, 0)
    if len(header) < 64 or header[:4] != b"\x7fELF" or header[4] != 2 or header[5] != 1:
        return None  # only 64-bit little-endian ELF is parsed; gdb reads the others itself
    phoff, = struct.unpack_from("<Q", header, 32)
    phentsize, phnum = struct.unpack_from("<HH", header, 54)
    page = os.sysconf("SC_PAGE_SIZE")
    for i in range(min(phnum, 64)):
        entry = os.pread(fd, 56, phoff + i * phentsize)
        if len(entry) < 56:
            return None
        p_type, _, p_offset, p_vaddr = struct.unpack_from("<IIQQ", entry, 0)
        if p_type == 1:  # the first PT_LOAD: mapped from file offset 0
            if p_offset >= page:
                return None
            return start - (p_vaddr - p_vaddr % page)
    return None

def trainwatch_mapped_libraries(pid, proc_root):
    """{path: (start, device, inode)} of the files mapped from offset 0, the program left out."""
    exe = os.readlink(f"{proc_root}/{pid}/exe")
    found = {}
    with open(f"{proc_root}/{pid}/maps", "rb") as maps:
        text = maps.read(TRAINWATCH_MAX_MAPS_BYTES).decode("utf-8", "replace")
    for line in text.splitlines():
        fields = line.split(None, 5)
        if len(fields) != 6 or int(fields[2], 16) != 0:
            continue
        path = fields[5]
        if path == exe or path in found or not TRAINWATCH_SAFE_PATH.match(path):
            continue
        major, minor = (int(part, 16) for part in fields[3].split(":"))
        found[path] = (int(fields[0].split("-")[0], 16), os.makedev(major, minor), int(fields[4]))
        if len(found) >= TRAINWATCH_MAX_LIBRARIES:
            break
    return found

def trainwatch_preload(pid, proc_root, python):
    started = time.monotonic()
    added = set()
    try:
        ours = os.stat("/proc/self/ns/mnt")
        theirs = os.stat(f"{proc_root}/{pid}/ns/mnt")
        if (ours.st_dev, ours.st_ino) != (theirs.st_dev, theirs.st_ino):
            print("trainwatch: the rank is in another mount namespace: its libraries are read "
                  "after the attach")
            return added
        libraries = trainwatch_mapped_libraries(pid, proc_root)
        gdb.execute("set auto-solib-add off")
        for path, (start, device, inode) in libraries.items():
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                opened = os.fstat(fd)
                if (not stat.S_ISREG(opened.st_mode) or opened.st_dev != device or
                        opened.st_ino != inode):
                    continue
                bias = trainwatch_load_bias(fd, start)
            except (OSError, struct.error):
                continue
            finally:
                os.close(fd)
            if bias is None:
                continue
            try:
                gdb.execute(f"add-symbol-file {path} -o {bias:#x}", to_string=True)
                added.add((device, inode))
            except gdb.error:
                pass
        if python:
            try:  # the interpreter's eval loop, whose frames py-bt reads first
                gdb.execute("info line _PyEval_EvalFrameDefault", to_string=True)
            except gdb.error:
                pass
    except Exception as error:
        print(f"trainwatch: libraries not read before the attach: {error}")
    print(f"trainwatch: read {len(added)} libraries' symbols before the attach in "
          f"{time.monotonic() - started:.2f} s")
    return added

TRAINWATCH_SOLIB_LINE = re.compile(
    r"^(?:0x[0-9a-f]+\s+0x[0-9a-f]+)?\s+No(?: \(\*\))?\s+(/.*)$")

def trainwatch_sharedlibrary_pattern(path):
    """A regex (POSIX basic, as `sharedlibrary` reads it) matching `path`, and harmless."""
    return "^" + "".join("\\." if c == "." else c if c.isalnum() or c in "_/-+" else "."
                         for c in path) + "$"

def trainwatch_attached(added):
    late = 0
    try:
        listed = gdb.execute("info sharedlibrary", to_string=True)
        for line in listed.splitlines():  # the libraries whose symbols gdb has not read
            match = TRAINWATCH_SOLIB_LINE.match(line)
            if not match:
                continue
            try:  # the link map may name it otherwise (/lib for /usr/lib)
                named = os.stat(match.group(1))
                if (named.st_dev, named.st_ino) in added:
                    continue
            except OSError:
                pass
            gdb.execute("sharedlibrary " + trainwatch_sharedlibrary_pattern(match.group(1)),
                        to_string=True)
            late += 1
    except Exception as error:
        print(f"trainwatch: reading the libraries left out: {error}; reading them all")
        gdb.execute("sharedlibrary", to_string=True)
    if late:
        print(f"trainwatch: read {late} more libraries' symbols after the attach")

def trainwatch_held():
    print(f"trainwatch: rank held {time.monotonic() - trainwatch_attach_at:.3f} s "
          "(attach to detach)")
)PY";

}  // namespace

std::string_view GdbPreloadPython() { return kPreload; }

std::optional<double> HeldSecondsIn(std::string_view gdb_output) {
  constexpr std::string_view kHeld = "trainwatch: rank held ";
  const std::size_t at = gdb_output.rfind(kHeld);
  if (at == std::string_view::npos || (at > 0 && gdb_output[at - 1] != '\n')) {
    return std::nullopt;
  }
  const char* first = gdb_output.data() + at + kHeld.size();
  double seconds = 0;
  const auto [end, error] = std::from_chars(first, gdb_output.data() + gdb_output.size(), seconds);
  if (error != std::errc() || end == first || seconds < 0) {
    return std::nullopt;
  }
  return seconds;
}

}  // namespace trainwatch::capture
