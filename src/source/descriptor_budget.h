// DescriptorBudget: how many log files may be held open at once, shared by every source. A
// followed file holds a descriptor for as long as it is followed; the process's open-file
// limit also has to cover the control socket and its clients, inotify, the state files, the
// collectors' pipes and the bundle being written. Files past the budget are not opened (they
// are listed as unwatched, and retried), so the daemon never runs itself out of descriptors
// for the things that keep it alive and answering. Loop thread only.
#pragma once

#include <cstddef>
#include <memory>

namespace trainwatch::source {

class DescriptorBudget {
 public:
  // One descriptor taken from a budget, given back when destroyed. Empty (taken from no
  // budget) when default-made.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept : budget_(other.budget_) { other.budget_ = nullptr; }
    Lease& operator=(Lease&& other) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { Release(); }

   private:
    friend class DescriptorBudget;
    explicit Lease(DescriptorBudget* budget) : budget_(budget) {}
    void Release();
    DescriptorBudget* budget_ = nullptr;
  };

  // The descriptors kept for everything but logs: a fixed floor plus an eighth of the limit.
  static constexpr std::size_t kReservedFloor = 64;
  // The budget the open-file limit `soft` leaves for logs.
  static std::size_t ForOpenFileLimit(unsigned long long soft);

  explicit DescriptorBudget(std::size_t limit) : limit_(limit) {}
  DescriptorBudget(const DescriptorBudget&) = delete;
  DescriptorBudget& operator=(const DescriptorBudget&) = delete;

  // A lease, or none (false) when all `limit` are out.
  bool Take(Lease& lease);
  bool exhausted() const { return used_ >= limit_; }
  std::size_t used() const { return used_; }
  std::size_t limit() const { return limit_; }

 private:
  std::size_t limit_;
  std::size_t used_ = 0;
};

}  // namespace trainwatch::source
