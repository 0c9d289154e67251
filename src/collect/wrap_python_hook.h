// The Python hook for the command of `trainwatch wrap` (collect/python_hook.h): a stacks
// folder of its own, <state_dir>/stacks/wrap-<pid> (0700: stacks name files and arguments),
// the variables that load the hook into every interpreter of the command, and the folder
// removed with what the hook wrote when the wrap ends. Loop thread only.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace trainwatch::collect {

class WrapPythonHook {
 public:
  // Null, said in the log, when the folder cannot be made (the command then runs without it).
  static std::unique_ptr<WrapPythonHook> Prepare(const std::string& state_dir);
  ~WrapPythonHook();
  WrapPythonHook(const WrapPythonHook&) = delete;
  WrapPythonHook& operator=(const WrapPythonHook&) = delete;

  // PYTHONPATH (the hook's folder first, the current one after it), TRAINWATCH_STACKS_DIR,
  // TRAINWATCH_STACKS_SIGNAL.
  std::vector<std::string> Environment() const;

 private:
  explicit WrapPythonHook(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
};

}  // namespace trainwatch::collect
