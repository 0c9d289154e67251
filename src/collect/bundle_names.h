// Names of files inside a bundle: a path or process name made into one safe file name, and the
// "-2", "-3"... that keep names unique within one collector's run. Used by the built-in
// collectors (the bundle file's own name is capture/bundle_name.h). SafeBundleName is pure; a
// UniqueNames belongs to one collector run, on one thread.
#pragma once

#include <set>
#include <string>
#include <string_view>

namespace trainwatch::collect {

// A path or name made into one safe bundle file name: no '/', only [A-Za-z0-9._-+], others
// become '_', leading "/" and "./" dropped: "/data/run1/rank0.log" -> "data_run1_rank0.log".
// Never empty, ".", or "..". Not unique by itself: see UniqueNames.
std::string SafeBundleName(std::string_view path);

// Bundle names unique within one collector run: a clash gets "-2", "-3"... before the
// last extension ("a.log", "a-2.log"; "a.tar.gz", "a.tar-2.gz"); a name without one, or a
// dotfile (".env"), gets it at the end.
class UniqueNames {
 public:
  std::string Take(const std::string& name);

 private:
  std::set<std::string> used_;
};

}  // namespace trainwatch::collect
