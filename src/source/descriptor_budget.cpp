#include "source/descriptor_budget.h"

namespace trainwatch::source {

DescriptorBudget::Lease& DescriptorBudget::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    Release();
    budget_ = other.budget_;
    other.budget_ = nullptr;
  }
  return *this;
}

void DescriptorBudget::Lease::Release() {
  if (budget_ != nullptr && budget_->used_ > 0) {
    --budget_->used_;
  }
  budget_ = nullptr;
}

std::size_t DescriptorBudget::ForOpenFileLimit(unsigned long long soft) {
  const unsigned long long reserved = kReservedFloor + soft / 8;
  return soft > reserved ? static_cast<std::size_t>(soft - reserved) : 0;
}

bool DescriptorBudget::Take(Lease& lease) {
  if (lease.budget_ == this) {
    return true;
  }
  if (exhausted()) {
    return false;
  }
  ++used_;
  lease = Lease(this);
  return true;
}

}  // namespace trainwatch::source
