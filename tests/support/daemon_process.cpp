#include "support/daemon_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "ops/control_server.h"
#include "support/run_binary.h"

namespace trainwatch::testing {
namespace {

pid_t Spawn(const std::vector<std::string>& argv, const std::string& log_path,
            const std::vector<std::string>& env, bool own_group) {
  // Built before fork, so that the child allocates less between fork and execv.
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& arg : argv) {
    args.push_back(const_cast<char*>(arg.c_str()));
  }
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (own_group) {
      ::setpgid(0, 0);
    }
    const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    const int null = ::open("/dev/null", O_RDONLY);
    ::dup2(null, 0);
    ::dup2(log, 1);
    ::dup2(log, 2);
    if (log > 2) ::close(log);  // as a shell's redirection leaves it: the log on 1 and 2 only
    if (null > 2) ::close(null);
    for (const std::string& entry : env) {
      ::putenv(const_cast<char*>(entry.c_str()));
    }
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

int Reap(pid_t pid, std::chrono::milliseconds timeout, bool& reaped) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int status = 0;
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      reaped = true;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return -1;
    }
    std::this_thread::sleep_for(10ms);
  }
}

}  // namespace

DaemonProcess::DaemonProcess(std::vector<std::string> args, std::string log_path,
                             const std::vector<std::string>& env)
    : log_path_(std::move(log_path)) {
  args.insert(args.begin(), TrainwatchBinary());
  pid_ = Spawn(args, log_path_, env, /*own_group=*/false);
}

std::unique_ptr<DaemonProcess> DaemonProcess::Program(const std::vector<std::string>& argv,
                                                      std::string log_path) {
  std::unique_ptr<DaemonProcess> program(new DaemonProcess());
  program->log_path_ = std::move(log_path);
  program->pid_ = Spawn(argv, program->log_path_, {}, /*own_group=*/false);
  return program;
}

DaemonProcess::~DaemonProcess() {
  if (pid_ > 0 && status_ < 0) {
    ::kill(pid_, SIGKILL);
    bool reaped = false;
    Reap(pid_, 5s, reaped);
  }
}

bool DaemonProcess::running() {
  if (status_ >= 0) {
    return false;
  }
  bool reaped = false;
  const int code = Reap(pid_, 0ms, reaped);
  if (reaped) {
    status_ = code;
  }
  return !reaped;
}

bool DaemonProcess::WaitReady(const std::string& state_dir, std::chrono::milliseconds timeout) {
  return WaitUntil(
             [&] {
               if (!running()) {
                 return true;
               }
               return ops::ControlRequest(state_dir + "/control.sock", R"({"command":"status"})")
                   .ok();
             },
             timeout) &&
         running();
}

Json DaemonProcess::Status(const std::string& state_dir) const {
  Result<std::string> reply =
      ops::ControlRequest(state_dir + "/control.sock", R"({"command":"status"})");
  return reply ? Json::parse(*reply, nullptr, false) : Json();
}

void DaemonProcess::Signal(int signum) const { ::kill(pid_, signum); }

int DaemonProcess::Wait(std::chrono::milliseconds timeout) {
  if (status_ >= 0) {
    return status_;
  }
  bool reaped = false;
  const int code = Reap(pid_, timeout, reaped);
  if (reaped) {
    status_ = code;
  }
  return code;
}

std::string DaemonProcess::Log() const {
  std::ifstream in(log_path_);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

JobProcess::JobProcess(const std::string& script, std::vector<std::string> args,
                       const std::string& log_path) {
  args.insert(args.begin(), script);
  args.insert(args.begin(), "/usr/bin/python3");
  pid_ = Spawn(args, log_path, {}, /*own_group=*/true);
}

JobProcess::~JobProcess() { KillGroup(); }

void JobProcess::KillGroup() {
  if (pid_ > 0 && !reaped_) {
    ::kill(-pid_, SIGKILL);
    Reap(pid_, 5s, reaped_);
  }
}

int JobProcess::Wait(std::chrono::milliseconds timeout) { return Reap(pid_, timeout, reaped_); }

bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return done();
    }
    std::this_thread::sleep_for(50ms);
  }
  return true;
}

std::vector<Json> ReadIncidents(const std::string& state_dir) {
  std::vector<Json> incidents;
  std::ifstream in(state_dir + "/incidents.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) {
      break;  // no '\n' yet: a record still being appended (an append can land in parts)
    }
    Json record = Json::parse(line);
    if (record.contains("firings")) {  // not a bundle record
      incidents.push_back(std::move(record));
    }
  }
  return incidents;
}

bool HavePyTorch() {
  static const bool have =
      ::access("/usr/bin/python3", X_OK) == 0 &&
      std::system("/usr/bin/python3 -c 'import torch, tqdm' >/dev/null 2>&1") == 0;
  return have;
}

std::string JobScript(const std::string& name) {
  return std::string(TRAINWATCH_TEST_SOURCE_DIR) + "/integration/jobs/" + name;
}

int FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) {
    return 0;
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  ::close(fd);
  return port;
}

}  // namespace trainwatch::testing
