// The Python that gdb runs, in its go-file form, to read a rank's shared libraries before it
// attaches: what holds a rank still is mostly gdb reading the symbols of the ~300 libraries a
// PyTorch process maps (1.2 s of a 1.8 s pause, measured on torch 1.13), and that can be done
// while the rank runs. From /proc/PID/maps each library is added at its load address
// (add-symbol-file -o), with gdb's own solib reading off; once attached, any library the rank
// mapped meanwhile, or that was skipped, is read by gdb's own means (`sharedlibrary`), so no
// stack loses a frame gdb would have unwound. Nothing is preloaded for a rank in another mount
// namespace (a container, a private /tmp): its paths name other files than ours, and gdb reads
// them inside the rank's namespace itself. A library is added only when the file this process
// opens (no link followed at its last component, a regular file) is the one mapped (the same
// device and inode as the maps line) and its name holds no character gdb's command line would
// read as syntax.
#pragma once

#include <optional>
#include <string_view>

namespace trainwatch::capture {

// The code, run with exec() by gdb's Python. It defines:
//   trainwatch_preload(pid, proc_root, python) -> the libraries added: (device, inode)
//   trainwatch_attached(added)  after the attach: reads the libraries left out
//   trainwatch_held()           after the detach: prints how long the rank was held since
//                               trainwatch_attach_at (set by the caller as it attaches)
// and prints one line saying how many libraries it read and how long that took.
std::string_view GdbPreloadPython();

// The seconds trainwatch_held() printed in gdb's output ("trainwatch: rank held 0.612 s
// (attach to detach)"): how long the rank stood still, the symbols read before left out.
// nullopt when it printed none (gdb attached at once, or ended before the detach).
std::optional<double> HeldSecondsIn(std::string_view gdb_output);

}  // namespace trainwatch::capture
