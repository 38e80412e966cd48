// RUN: %check_amp %s %t.cpp
// Not findings: the body of a guard class, ExcludeDispatchKeyGuard in a custom-op autocast
// kernel, at::autocast::cached_cast, a look-alike API in another namespace, an unrelated class
// with a set_enabled member.
#include <torch/torch.h>

// The guard's own body is its implementation, not a finding (its uses are).
class AutocastGuard {
public:
  AutocastGuard() : prev_(at::autocast::is_enabled()) {
    at::autocast::set_enabled(true);
    at::autocast::increment_nesting();
  }
  ~AutocastGuard() {
    if (at::autocast::decrement_nesting() == 0)
      at::autocast::clear_cache();
    at::autocast::set_enabled(prev_);
  }

private:
  bool prev_;
};

// A custom op's autocast kernel: dispatch-key exclusion and cached casts.
torch::Tensor my_op_autocast(const torch::Tensor &a) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(3);
  auto a16 = at::autocast::cached_cast(at::kHalf, a);
  return torch::relu(a16);
}

namespace mylib {
namespace autocast {
void set_enabled(bool);
void clear_cache();
} // namespace autocast
} // namespace mylib

void look_alike() {
  mylib::autocast::set_enabled(true);
  mylib::autocast::clear_cache();
}

struct Logger {
  void set_enabled(bool on);
  void set_cpu_enabled(bool on);
};

void unrelated(Logger &log) {
  log.set_enabled(true);
  log.set_cpu_enabled(false);
}

namespace other {
using namespace mylib;
void unqualified() { autocast::set_enabled(false); }
} // namespace other
