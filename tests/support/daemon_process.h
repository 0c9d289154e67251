// DaemonProcess: the real `trainwatch daemon` (or `wrap`) as a child process for integration
// tests, with its stderr in a log file, asked through its real control socket. JobProcess: a
// training job (a Python script run by Debian's /usr/bin/python3) in its own process group,
// its output appended to a log file, killed with its whole group when the test ends.
// Blocking; test thread only.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace trainwatch::testing {

using Json = nlohmann::json;
using namespace std::chrono_literals;

class DaemonProcess {
 public:
  // Starts `trainwatch ARGS...` with `env` added to the environment ("NAME=value").
  DaemonProcess(std::vector<std::string> args, std::string log_path,
                const std::vector<std::string>& env = {});
  // Another server a test runs beside the daemon (Alertmanager, a webhook receiver):
  // `argv` whole, killed when the test ends.
  static std::unique_ptr<DaemonProcess> Program(const std::vector<std::string>& argv,
                                                std::string log_path);
  ~DaemonProcess();
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  // Waits until the control socket in `state_dir` answers; false if the daemon exited first.
  bool WaitReady(const std::string& state_dir, std::chrono::milliseconds timeout = 20s);
  Json Status(const std::string& state_dir) const;
  void Signal(int signum) const;
  // Waits for the exit; the exit code, or 128 + signal, or -1 on timeout.
  int Wait(std::chrono::milliseconds timeout = 10s);
  bool running();
  std::string Log() const;
  pid_t pid() const { return pid_; }

 private:
  DaemonProcess() = default;
  pid_t pid_ = -1;
  std::string log_path_;
  int status_ = -1;
};

class JobProcess {
 public:
  // Runs /usr/bin/python3 SCRIPT ARGS... with stdout and stderr appended to `log_path`.
  JobProcess(const std::string& script, std::vector<std::string> args, const std::string& log_path);
  ~JobProcess();
  JobProcess(const JobProcess&) = delete;
  JobProcess& operator=(const JobProcess&) = delete;
  void KillGroup();
  int Wait(std::chrono::milliseconds timeout);
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

// Polls `done` every 50 ms until it holds or `timeout` passes; returns its last answer.
bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout);

// The incidents recorded in `state_dir`/incidents.jsonl, in order (not the bundle records).
std::vector<Json> ReadIncidents(const std::string& state_dir);

// Whether Debian's PyTorch is there (python3-torch, python3-tqdm); tests that need it skip
// with this message otherwise.
bool HavePyTorch();
inline constexpr const char* kNoPyTorch =
    "Debian's PyTorch is not installed (apt-get install python3-torch python3-tqdm)";

// A TCP port free on 127.0.0.1 now (a server's or a job's rendezvous; another process may take
// it before it is used, rarely).
int FreeLoopbackPort();

// tests/integration/jobs/NAME in the source tree.
std::string JobScript(const std::string& name);

}  // namespace trainwatch::testing
