#include "core/posix_env.h"

#include <signal.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <map>
#include <memory>
#include <set>

#include "core/proc_files.h"
#include "core/unique_fd.h"
#include "core/uv_handle.h"

namespace trainwatch {

std::vector<std::string> EnvironmentWith(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  auto name_of = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
  std::set<std::string> replaced;
  for (const std::string& entry : extra) {
    replaced.insert(name_of(entry));
  }
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    if (replaced.count(name_of(*entry)) == 0) {
      env.emplace_back(*entry);
    }
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

namespace {

class UvLoopTimer final : public LoopTimer {
 public:
  UvLoopTimer(uv_loop_t* loop, std::function<void()> on_fire) : on_fire_(std::move(on_fire)) {
    int status = 0;
    timer_ = UvHandle<uv_timer_t>::Make(loop, status, uv_timer_init);
    timer_->data = this;
  }
  void Start(std::chrono::milliseconds delay, std::chrono::milliseconds repeat) override {
    uv_timer_start(
        timer_.get(),
        [](uv_timer_t* timer) {
          if (auto* self = static_cast<UvLoopTimer*>(timer->data)) {
            self->on_fire_();
          }
        },
        static_cast<std::uint64_t>(delay.count()), static_cast<std::uint64_t>(repeat.count()));
  }
  void Stop() override { uv_timer_stop(timer_.get()); }
  bool active() const override { return uv_is_active(timer_.base()) != 0; }

 private:
  std::function<void()> on_fire_;
  UvHandle<uv_timer_t> timer_;
};

class UvLoopIdle final : public LoopIdle {
 public:
  UvLoopIdle(uv_loop_t* loop, std::function<void()> on_turn) : on_turn_(std::move(on_turn)) {
    int status = 0;
    idle_ = UvHandle<uv_idle_t>::Make(loop, status, uv_idle_init);
    idle_->data = this;
  }
  void Start() override {
    uv_idle_start(idle_.get(), [](uv_idle_t* idle) {
      if (auto* self = static_cast<UvLoopIdle*>(idle->data)) {
        self->on_turn_();
      }
    });
  }
  void Stop() override { uv_idle_stop(idle_.get()); }
  bool active() const override { return uv_is_active(idle_.base()) != 0; }

 private:
  std::function<void()> on_turn_;
  UvHandle<uv_idle_t> idle_;
};

}  // namespace

// The loop's one inotify descriptor, read when libuv says it is readable, shared by every
// directory watch (the kernel allows a user only 128 inotify instances, and a source may watch
// hundreds of per-rank directories). libuv's uv_fs_event does not ask for IN_CLOSE_WRITE, the
// one sign the kernel gives that a writer closed (or died holding) a log, so the watch is made
// here. A write is IN_MODIFY or IN_ATTRIB; everything else but a close is a rename; an
// overflowed queue is a rename of nothing, told to every watch (each owner rescans).
class InotifyHub : public std::enable_shared_from_this<InotifyHub> {
 public:
  int Start(uv_loop_t* loop) {
    fd_ = UniqueFd(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    if (fd_.get() < 0) {
      return uv_translate_sys_error(errno);
    }
    int status = 0;
    handle_ = UvHandle<uv_poll_t>::Make(loop, status, uv_poll_init, fd_.get());
    if (!handle_) {
      return status;
    }
    handle_->data = this;
    return uv_poll_start(handle_.get(), UV_READABLE, [](uv_poll_t* handle, int result, int) {
      auto* self = static_cast<InotifyHub*>(handle->data);
      if (self != nullptr && result == 0) {
        self->ReadEvents();
      }
    });
  }
  ~InotifyHub() {
    if (handle_) {
      handle_->data = nullptr;
    }
  }
  // Watches `dir`; the watch's number (for Remove), or libuv's error code.
  Result<std::pair<int, std::uint64_t>> Add(const std::string& dir, Env::DirChange on_change) {
    constexpr std::uint32_t kMask = IN_ATTRIB | IN_CREATE | IN_MODIFY | IN_DELETE | IN_DELETE_SELF |
                                    IN_MOVE_SELF | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE |
                                    IN_ONLYDIR;
    const int wd = ::inotify_add_watch(fd_.get(), dir.c_str(), kMask);
    if (wd < 0) {
      return Error{uv_strerror(uv_translate_sys_error(errno))};
    }
    const std::uint64_t id = ++next_id_;
    by_wd_[wd][id] = std::move(on_change);  // one kernel watch per directory, shared
    return std::pair<int, std::uint64_t>{wd, id};
  }
  void Remove(int wd, std::uint64_t id) {
    auto found = by_wd_.find(wd);
    if (found == by_wd_.end() || found->second.erase(id) == 0) {
      return;  // the directory went (IN_IGNORED) and took its watch along
    }
    if (found->second.empty()) {
      by_wd_.erase(found);
      ::inotify_rm_watch(fd_.get(), wd);
    }
  }

 private:
  void Tell(int wd, std::string_view name, Env::DirEvent event) {
    auto found = by_wd_.find(wd);
    if (found == by_wd_.end()) {
      return;
    }
    // Copies: a callback may add or remove watches.
    std::vector<std::pair<std::uint64_t, Env::DirChange>> told(found->second.begin(),
                                                               found->second.end());
    for (const auto& [id, on_change] : told) {
      on_change(name, event);
    }
  }
  void ReadEvents() {
    const std::shared_ptr<InotifyHub> keep =
        shared_from_this();  // a callback may drop the last watch
    alignas(inotify_event) std::array<char, 16384> buffer{};
    for (;;) {
      const ssize_t got = ::read(fd_.get(), buffer.data(), buffer.size());
      if (got <= 0) {
        return;  // EAGAIN: drained
      }
      for (ssize_t at = 0; at < got;) {
        const auto* event = reinterpret_cast<const inotify_event*>(buffer.data() + at);
        at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
        const std::string_view name = event->len > 0 ? std::string_view(event->name) : "";
        if ((event->mask & IN_Q_OVERFLOW) != 0) {
          std::vector<int> wds;
          for (const auto& [wd, watches] : by_wd_) {
            wds.push_back(wd);
          }
          for (int wd : wds) {
            Tell(wd, "", Env::DirEvent::kRename);
          }
        } else if ((event->mask & IN_IGNORED) != 0) {
          by_wd_.erase(event->wd);  // the directory is gone; its number may be reused
        } else if ((event->mask & IN_CLOSE_WRITE) != 0) {
          Tell(event->wd, name, Env::DirEvent::kCloseWrite);
        } else if ((event->mask & (IN_MODIFY | IN_ATTRIB)) != 0) {
          Tell(event->wd, name, Env::DirEvent::kWrite);
        } else {
          Tell(event->wd, name, Env::DirEvent::kRename);
        }
      }
    }
  }

  UniqueFd fd_;
  UvHandle<uv_poll_t> handle_;  // declared after fd_: closed before it
  std::map<int, std::map<std::uint64_t, Env::DirChange>> by_wd_;
  std::uint64_t next_id_ = 0;
};

namespace {

class InotifyDirWatch final : public ChangeWatch {
 public:
  InotifyDirWatch(std::shared_ptr<InotifyHub> hub, int wd, std::uint64_t id)
      : hub_(std::move(hub)), wd_(wd), id_(id) {}
  ~InotifyDirWatch() override { hub_->Remove(wd_, id_); }
  InotifyDirWatch(const InotifyDirWatch&) = delete;
  InotifyDirWatch& operator=(const InotifyDirWatch&) = delete;

 private:
  std::shared_ptr<InotifyHub> hub_;
  int wd_;
  std::uint64_t id_;
};

class UvFilePoll final : public ChangeWatch {
 public:
  explicit UvFilePoll(std::function<void(bool gone)> on_change)
      : on_change_(std::move(on_change)) {}
  int Start(uv_loop_t* loop, const std::string& path, std::chrono::milliseconds interval) {
    int status = 0;
    handle_ = UvHandle<uv_fs_poll_t>::Make(loop, status, uv_fs_poll_init);
    if (!handle_) {
      return status;
    }
    handle_->data = this;
    return uv_fs_poll_start(
        handle_.get(),
        [](uv_fs_poll_t* handle, int result, const uv_stat_t*, const uv_stat_t*) {
          if (auto* self = static_cast<UvFilePoll*>(handle->data)) {
            self->on_change_(result < 0);
          }
        },
        path.c_str(), static_cast<unsigned>(interval.count()));
  }

 private:
  std::function<void(bool gone)> on_change_;
  UvHandle<uv_fs_poll_t> handle_;
};

class UvChild final : public ChildProcess {
 public:
  explicit UvChild(ChildEvents events) : events_(std::move(events)) {}

  int Start(uv_loop_t* loop, const SpawnOptions& options) {
    int status = 0;
    for (auto& pipe : pipes_) {
      pipe = UvHandle<uv_pipe_t>::Make(loop, status, uv_pipe_init, 0);
      if (!pipe) {
        return status;
      }
      pipe->data = this;
    }
    std::vector<std::string> argv = options.argv;
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (std::string& arg : argv) {
      args.push_back(arg.data());
    }
    args.push_back(nullptr);
    std::vector<std::string> env_strings;
    std::vector<char*> env;
    if (!options.extra_env.empty()) {
      env_strings = EnvironmentWith(options.extra_env);
      for (std::string& entry : env_strings) {
        env.push_back(entry.data());
      }
      env.push_back(nullptr);
    }
    uv_stdio_container_t stdio[3];
    stdio[0].flags = UV_IGNORE;
    for (std::size_t i = 0; i < 2; ++i) {
      stdio[i + 1].flags = static_cast<uv_stdio_flags>(UV_CREATE_PIPE | UV_WRITABLE_PIPE);
      stdio[i + 1].data.stream = reinterpret_cast<uv_stream_t*>(pipes_[i].get());
    }
    uv_process_options_t spawn{};
    spawn.file = args[0];
    spawn.args = args.data();
    spawn.env = env.empty() ? nullptr : env.data();
    spawn.stdio = stdio;
    spawn.stdio_count = 3;
    spawn.cwd = options.cwd.empty() ? nullptr : options.cwd.c_str();
    // Its own session and so its own process group: a deadline kills everything it started
    // (a shell's children, docker's helpers), not only the leader.
    spawn.flags = UV_PROCESS_DETACHED;
    spawn.exit_cb = [](uv_process_t* process, int64_t exit_status, int term_signal) {
      if (auto* self = static_cast<UvChild*>(process->data)) {
        self->events_.on_exit(exit_status, term_signal);
      }
    };
    process_ = UvHandle<uv_process_t>::Make(loop, status, uv_spawn, &spawn);
    if (!process_) {
      return status;
    }
    process_->data = this;
    for (auto& pipe : pipes_) {
      uv_read_start(
          reinterpret_cast<uv_stream_t*>(pipe.get()),
          [](uv_handle_t* handle, size_t, uv_buf_t* buf) {
            auto* self = static_cast<UvChild*>(handle->data);
            *buf = uv_buf_init(self->buffer_.data(), self->buffer_.size());
          },
          [](uv_stream_t* stream, ssize_t n, const uv_buf_t* buf) {
            auto* self = static_cast<UvChild*>(stream->data);
            if (self == nullptr) {
              return;
            }
            const bool is_stderr = stream == reinterpret_cast<uv_stream_t*>(self->pipes_[1].get());
            if (n < 0) {
              uv_read_stop(stream);
              self->events_.on_output_end(is_stderr);
              return;
            }
            self->events_.on_output(is_stderr,
                                    std::string_view(buf->base, static_cast<std::size_t>(n)));
          });
    }
    return 0;
  }

  int pid() const override { return process_ ? process_->pid : 0; }

 private:
  ChildEvents events_;
  std::array<UvHandle<uv_pipe_t>, 2> pipes_;  // stdout, stderr
  UvHandle<uv_process_t> process_;
  std::array<char, 64 * 1024> buffer_{};
};

}  // namespace

std::unique_ptr<LoopTimer> PosixEnv::NewTimer(std::function<void()> on_fire) {
  return std::make_unique<UvLoopTimer>(loop_, std::move(on_fire));
}

std::unique_ptr<LoopIdle> PosixEnv::NewIdle(std::function<void()> on_turn) {
  return std::make_unique<UvLoopIdle>(loop_, std::move(on_turn));
}

void PosixEnv::RunOnPool(std::function<void()> work, std::function<void()> done) {
  // The request and both functions live on the heap until `done` has run.
  struct Request {
    uv_work_t request{};
    std::function<void()> work;
    std::function<void()> done;
  };
  auto owned = std::make_unique<Request>();
  owned->work = [work = std::move(work), starts = pool_starts_] {
    std::multiset<SteadyTime>::iterator mine;
    {
      const std::lock_guard lock(starts->mutex);
      mine = starts->started.insert(std::chrono::steady_clock::now());
    }
    work();
    const std::lock_guard lock(starts->mutex);
    starts->started.erase(mine);
  };
  owned->done = std::move(done);
  owned->request.data = owned.get();
  const int status = uv_queue_work(
      loop_, &owned->request,
      [](uv_work_t* request) { static_cast<Request*>(request->data)->work(); },
      [](uv_work_t* request, int) {
        const std::unique_ptr<Request> finished(static_cast<Request*>(request->data));
        finished->done();
      });
  if (status != 0) {
    owned->work();  // refused (it never is for a valid request): late, but not lost
    owned->done();
    return;
  }
  static_cast<void>(owned.release());  // freed by the after-work callback
}

Env::PoolWork PosixEnv::PoolWorkNow() const {
  const std::lock_guard lock(pool_starts_->mutex);
  PoolWork now;
  now.running = pool_starts_->started.size();
  if (!pool_starts_->started.empty()) {
    now.oldest = std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now() -
                                                      *pool_starts_->started.begin());
  }
  return now;
}

Result<std::unique_ptr<ChangeWatch>> PosixEnv::WatchDirectory(const std::string& dir,
                                                              DirChange on_change) {
  std::shared_ptr<InotifyHub> hub = inotify_.lock();
  if (!hub) {
    hub = std::make_shared<InotifyHub>();
    if (const int status = hub->Start(loop_); status != 0) {
      return Error{uv_strerror(status)};
    }
    inotify_ = hub;
  }
  Result<std::pair<int, std::uint64_t>> added = hub->Add(dir, std::move(on_change));
  if (!added) {
    return added.error();
  }
  return std::unique_ptr<ChangeWatch>(
      std::make_unique<InotifyDirWatch>(std::move(hub), added->first, added->second));
}

Result<std::unique_ptr<ChangeWatch>> PosixEnv::PollFile(const std::string& path,
                                                        std::chrono::milliseconds interval,
                                                        std::function<void(bool gone)> on_change) {
  auto poll = std::make_unique<UvFilePoll>(std::move(on_change));
  if (const int status = poll->Start(loop_, path, interval); status != 0) {
    return Error{uv_strerror(status)};
  }
  return std::unique_ptr<ChangeWatch>(std::move(poll));
}

Result<std::unique_ptr<ChildProcess>> PosixEnv::Spawn(const SpawnOptions& options,
                                                      ChildEvents events) {
  auto child = std::make_unique<UvChild>(std::move(events));
  if (const int status = child->Start(loop_, options); status != 0) {
    if (status == UV_ENOENT) {
      return Error{std::string(kNotInstalled)};
    }
    return Error{uv_strerror(status)};
  }
  return std::unique_ptr<ChildProcess>(std::move(child));
}

void PosixEnv::Signal(int pid, int signal) { ::kill(pid, signal); }

bool PosixEnv::ProcessExists(int pid) {
  int status = 0;
  if (::waitpid(pid, &status, WNOHANG) == pid) {
    return false;  // our child, dead until now, reaped
  }
  if (::kill(pid, 0) != 0 && errno != EPERM) {  // EPERM: it exists, as another user's
    return false;
  }
  // Exited, waiting for a parent that is busy, stuck or (a container's init) never reaps: a
  // zombie writes no more, and a killed rank must not pass for a live, silent one.
  if (IsZombie(pid, proc_root_)) {
    // Our child that exited between the first look and this one is reaped as it would have
    // been then (for another's, ECHILD).
    ::waitpid(pid, &status, WNOHANG);
    return false;
  }
  return true;
}

}  // namespace trainwatch
