#include "core/prefilter_compiler.h"

#include <fcntl.h>
#include <hs/hs.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>

#include "core/unique_fd.h"

namespace trainwatch {
namespace {

constexpr std::string_view kRequestMagic = "trainwatch-prefilter-request-1\n";
constexpr char kDatabaseAnswer = 'D';
constexpr char kErrorAnswer = 'E';

struct HelperSetting {
  std::mutex mutex;
  std::vector<std::string> command;
  std::chrono::milliseconds deadline{0};
  bool gave_up = false;  // a helper missed its deadline: compile here from then on
};

HelperSetting& Setting() {
  static HelperSetting setting;
  return setting;
}

void AppendU32(std::string& out, std::uint32_t value) {
  for (int shift = 0; shift < 32; shift += 8) {
    out.push_back(static_cast<char>((value >> shift) & 0xff));
  }
}

// Reads the fields of the wire format in order; any read past the end fails the whole parse.
class WireReader {
 public:
  explicit WireReader(std::string_view bytes) : bytes_(bytes) {}

  std::optional<std::uint32_t> U32() {
    if (bytes_.size() < 4) {
      return std::nullopt;
    }
    std::uint32_t value = 0;
    for (int i = 3; i >= 0; --i) {
      value = (value << 8) | static_cast<unsigned char>(bytes_[static_cast<std::size_t>(i)]);
    }
    bytes_.remove_prefix(4);
    return value;
  }
  std::optional<std::string_view> Bytes(std::size_t length) {
    if (bytes_.size() < length) {
      return std::nullopt;
    }
    std::string_view taken = bytes_.substr(0, length);
    bytes_.remove_prefix(length);
    return taken;
  }
  bool Done() const { return bytes_.empty(); }

 private:
  std::string_view bytes_;
};

PrefilterCompileResult CompileHere(const PrefilterCompileRequest& request) {
  PrefilterCompileResult result;
  hs_database_t* db = nullptr;
  hs_compile_error_t* raw_error = nullptr;
  const hs_error_t rc = hs_compile_multi(
      request.expressions.data(), request.flags.data(), request.ids.data(),
      static_cast<unsigned>(request.expressions.size()), HS_MODE_BLOCK, nullptr, &db, &raw_error);
  const HsCompileError error(raw_error);
  if (rc == HS_SUCCESS) {
    result.database.reset(db);
    return result;
  }
  result.failed_index = error ? error->expression : -1;
  result.message = error && error->message ? error->message : "unknown Hyperscan error";
  return result;
}

bool ReadAll(int fd, std::string& out) {
  char buffer[65536];
  for (;;) {
    const ssize_t got = read(fd, buffer, sizeof buffer);
    if (got == 0) {
      return true;
    }
    if (got < 0) {
      if (errno == EINTR) {
        continue;
      }
      return false;
    }
    out.append(buffer, static_cast<std::size_t>(got));
  }
}

bool WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t put = write(fd, bytes.data(), bytes.size());
    if (put < 0) {
      if (errno == EINTR) {
        continue;
      }
      return false;
    }
    bytes.remove_prefix(static_cast<std::size_t>(put));
  }
  return true;
}

// The request's expressions, owned (the request itself only points at them).
struct DecodedRequest {
  std::vector<std::string> expressions;
  PrefilterCompileRequest request;
};

std::optional<DecodedRequest> DecodeRequest(std::string_view bytes) {
  if (!bytes.starts_with(kRequestMagic)) {
    return std::nullopt;
  }
  WireReader reader(bytes.substr(kRequestMagic.size()));
  const std::optional<std::uint32_t> count = reader.U32();
  if (!count) {
    return std::nullopt;
  }
  DecodedRequest decoded;
  for (std::uint32_t i = 0; i < *count; ++i) {
    const std::optional<std::uint32_t> flags = reader.U32();
    const std::optional<std::uint32_t> id = reader.U32();
    const std::optional<std::uint32_t> length = reader.U32();
    if (!flags || !id || !length) {
      return std::nullopt;
    }
    const std::optional<std::string_view> expression = reader.Bytes(*length);
    if (!expression || expression->find('\0') != std::string_view::npos) {
      return std::nullopt;
    }
    decoded.expressions.emplace_back(*expression);
    decoded.request.flags.push_back(*flags);
    decoded.request.ids.push_back(*id);
  }
  if (!reader.Done()) {
    return std::nullopt;
  }
  for (const std::string& expression : decoded.expressions) {
    decoded.request.expressions.push_back(expression.c_str());
  }
  return decoded;
}

// The helper's answer, or why there is none.
struct HelperRun {
  bool ran = false;  // false: start, crash or garbage; the caller compiles here instead
  bool timed_out = false;
  long peak_kib = 0;  // the helper's resident high-water mark, for the log
  std::string answer;
  std::string problem;
};

// Starts the helper with a socket as its stdin and stdout (a socket, so that a helper gone
// before it read the request costs EPIPE, never a SIGPIPE), with default signal handling and
// no other inherited descriptor, then trades the request for the answer within `deadline`.
HelperRun RunHelper(const std::vector<std::string>& command, std::string_view request,
                    std::chrono::milliseconds deadline) {
  HelperRun run;
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    run.problem = std::string("socketpair: ") + std::strerror(errno);
    return run;
  }
  UniqueFd ours(pair[0]);
  UniqueFd theirs(pair[1]);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, theirs.get(), STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, theirs.get(), STDOUT_FILENO);
  posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none;
  sigset_t all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &all);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> argv;
  argv.reserve(command.size() + 1);
  for (const std::string& word : command) {
    argv.push_back(const_cast<char*>(word.c_str()));
  }
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, argv[0], &actions, &attributes, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (spawned != 0) {
    run.problem = "cannot start " + command[0] + ": " + std::strerror(spawned);
    return run;
  }
  theirs = UniqueFd();  // the helper holds its end; ours sees end of file when it exits
  fcntl(ours.get(), F_SETFL, fcntl(ours.get(), F_GETFL) | O_NONBLOCK);

  const auto give_up = std::chrono::steady_clock::now() + deadline;
  bool eof = false;
  bool send_failed = false;
  while (!eof) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        give_up - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      run.timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    pollfd watch{ours.get(), static_cast<short>(POLLIN | (request.empty() ? 0 : POLLOUT)), 0};
    if (poll(&watch, 1, static_cast<int>(left.count())) < 0 && errno != EINTR) {
      kill(pid, SIGKILL);
      run.problem = std::string("poll: ") + std::strerror(errno);
      break;
    }
    if (!request.empty() && (watch.revents & (POLLOUT | POLLERR | POLLHUP)) != 0) {
      const ssize_t put = send(ours.get(), request.data(), request.size(), MSG_NOSIGNAL);
      if (put > 0) {
        request.remove_prefix(static_cast<std::size_t>(put));
      } else if (put < 0 && errno != EAGAIN && errno != EINTR) {
        send_failed = true;  // the helper is gone; its exit status says why
        request = {};
      }
      if (request.empty()) {
        shutdown(ours.get(), SHUT_WR);
      }
    }
    if ((watch.revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      char buffer[65536];
      const ssize_t got = recv(ours.get(), buffer, sizeof buffer, 0);
      if (got > 0) {
        run.answer.append(buffer, static_cast<std::size_t>(got));
      } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
        eof = true;
      }
    }
  }
  int status = 0;
  rusage usage{};
  pid_t waited = -1;
  do {
    waited = wait4(pid, &status, 0, &usage);
  } while (waited < 0 && errno == EINTR);
  run.peak_kib = usage.ru_maxrss;
  if (run.timed_out) {
    run.problem = "the compile took longer than " + std::to_string(deadline.count()) + " ms";
    return run;
  }
  if (!run.problem.empty()) {
    return run;
  }
  if (waited != pid) {  // reaped elsewhere: its exit status is unknown
    run.problem = std::string("wait4: ") + std::strerror(errno);
  } else if (WIFSIGNALED(status)) {
    run.problem = command[0] + " was killed by signal " + std::to_string(WTERMSIG(status));
  } else if (WEXITSTATUS(status) != 0) {
    run.problem = command[0] + " exited with status " + std::to_string(WEXITSTATUS(status));
  } else if (send_failed) {
    run.problem = command[0] + " did not read the request";
  } else {
    run.ran = true;
  }
  return run;
}

// The helper's answer as a result; nullopt when it is not one.
std::optional<PrefilterCompileResult> DecodeAnswer(std::string answer) {
  if (answer.empty()) {
    return std::nullopt;
  }
  PrefilterCompileResult result;
  if (answer[0] == kDatabaseAnswer) {
    answer.erase(0, 1);
    hs_database_t* db = nullptr;
    if (hs_deserialize_database(answer.data(), answer.size(), &db) != HS_SUCCESS) {
      return std::nullopt;
    }
    result.database.reset(db);
    result.serialized = std::move(answer);
    return result;
  }
  if (answer[0] != kErrorAnswer) {
    return std::nullopt;
  }
  WireReader reader(std::string_view(answer).substr(1));
  const std::optional<std::uint32_t> index = reader.U32();
  const std::optional<std::uint32_t> length = reader.U32();
  if (!index || !length) {
    return std::nullopt;
  }
  const std::optional<std::string_view> message = reader.Bytes(*length);
  if (!message || !reader.Done()) {
    return std::nullopt;
  }
  result.failed_index = static_cast<int>(static_cast<std::int32_t>(*index));
  result.message = std::string(*message);
  return result;
}

}  // namespace

void CompilePrefiltersWith(std::vector<std::string> command, std::chrono::milliseconds deadline) {
  HelperSetting& setting = Setting();
  const std::lock_guard lock(setting.mutex);
  setting.command = std::move(command);
  setting.deadline = deadline;
  setting.gave_up = false;
}

std::string EncodePrefilterRequest(const PrefilterCompileRequest& request) {
  std::string out(kRequestMagic);
  AppendU32(out, static_cast<std::uint32_t>(request.expressions.size()));
  for (std::size_t i = 0; i < request.expressions.size(); ++i) {
    const std::string_view expression = request.expressions[i];
    AppendU32(out, request.flags[i]);
    AppendU32(out, request.ids[i]);
    AppendU32(out, static_cast<std::uint32_t>(expression.size()));
    out.append(expression);
  }
  return out;
}

PrefilterCompileResult CompilePrefilter(const PrefilterCompileRequest& request, bool in_helper) {
  std::vector<std::string> command;
  std::chrono::milliseconds deadline{0};
  {
    HelperSetting& setting = Setting();
    const std::lock_guard lock(setting.mutex);
    if (!setting.gave_up) {
      command = setting.command;
      deadline = setting.deadline;
    }
  }
  if (command.empty() || !in_helper) {
    return CompileHere(request);
  }
  const auto started = std::chrono::steady_clock::now();
  HelperRun run = RunHelper(command, EncodePrefilterRequest(request), deadline);
  if (run.ran) {
    if (std::optional<PrefilterCompileResult> answered = DecodeAnswer(std::move(run.answer))) {
      spdlog::info(
          "compiled a prefilter of {} patterns in a helper process: {} ms, its peak {:.1f} MiB",
          request.expressions.size(),
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                started)
              .count(),
          static_cast<double>(run.peak_kib) / 1024);
      return std::move(*answered);
    }
    run.problem = command[0] + " answered something that is not a compiled prefilter";
  }
  if (run.timed_out) {
    HelperSetting& setting = Setting();
    const std::lock_guard lock(setting.mutex);
    setting.gave_up = true;
  }
  spdlog::warn("prefilter compile helper failed ({}); compiling in this process instead",
               run.problem);
  return CompileHere(request);
}

int RunPrefilterCompilerHelper(int in_fd, int out_fd) {
  std::string bytes;
  if (!ReadAll(in_fd, bytes)) {
    std::fprintf(stderr, "trainwatch compile-prefilter: cannot read the request: %s\n",
                 std::strerror(errno));
    return 1;
  }
  const std::optional<DecodedRequest> decoded = DecodeRequest(bytes);
  if (!decoded) {
    std::fprintf(stderr,
                 "trainwatch compile-prefilter: stdin is not a prefilter request (the daemon "
                 "runs this command itself; it is not for people)\n");
    return 1;
  }
  bytes.clear();
  bytes.shrink_to_fit();
  const PrefilterCompileResult result = CompileHere(decoded->request);
  std::string answer;
  if (result.database) {
    char* serialized = nullptr;
    std::size_t length = 0;
    if (hs_serialize_database(result.database.get(), &serialized, &length) != HS_SUCCESS) {
      std::fprintf(stderr, "trainwatch compile-prefilter: cannot serialize the database\n");
      return 1;
    }
    const std::unique_ptr<char, decltype(&std::free)> owned(serialized, &std::free);
    answer.push_back(kDatabaseAnswer);
    answer.append(serialized, length);
  } else {
    answer.push_back(kErrorAnswer);
    AppendU32(answer, static_cast<std::uint32_t>(static_cast<std::int32_t>(result.failed_index)));
    AppendU32(answer, static_cast<std::uint32_t>(result.message.size()));
    answer += result.message;
  }
  if (!WriteAll(out_fd, answer)) {
    std::fprintf(stderr, "trainwatch compile-prefilter: cannot write the answer: %s\n",
                 std::strerror(errno));
    return 1;
  }
  return 0;
}

}  // namespace trainwatch
