#include "core/lazy_regex.h"

namespace trainwatch {

LazyRegex::LazyRegex(std::unique_ptr<const RE2> compiled)
    : pattern_(compiled->pattern()), options_(compiled->options()), regex_(std::move(compiled)) {}

const RE2& LazyRegex::get() const {
  std::call_once(once_, [this] {
    if (regex_ == nullptr) {
      // The same pattern and options compiled before: it compiles again.
      regex_ = std::make_unique<const RE2>(pattern_, options_);
    }
  });
  return *regex_;
}

}  // namespace trainwatch
