// UniqueFd: owns a file descriptor and closes it when it goes out of scope, so no early
// return can leak one. A borrowed descriptor (standard input) is never closed. Move-only.
#pragma once

#include <unistd.h>

#include <utility>

namespace trainwatch {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd, bool owned = true) : fd_(fd), owned_(owned) {}
  UniqueFd(UniqueFd&& other) noexcept
      : fd_(std::exchange(other.fd_, -1)), owned_(std::exchange(other.owned_, false)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = std::exchange(other.fd_, -1);
      owned_ = std::exchange(other.owned_, false);
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Reset(); }

  int get() const { return fd_; }
  // Hands the descriptor over (to a DIR*, say): no longer closed here.
  [[nodiscard]] int Release() {
    owned_ = false;
    return std::exchange(fd_, -1);
  }

 private:
  void Reset() {
    if (owned_ && fd_ >= 0) {
      ::close(fd_);
    }
    fd_ = -1;
    owned_ = false;
  }

  int fd_ = -1;
  bool owned_ = false;
};

}  // namespace trainwatch
