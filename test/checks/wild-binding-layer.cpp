// REQUIRES: libtorch
// RUN: %check_amp_real %s %t.cpp -- -isystem %torch_include
// WILD: a binding layer (R or Python bindings) over real libtorch headers: thin setters forward
// their caller's value to autocast, getters read it, wrappers call the AMP kernels. None of them
// is an autocast scope or a training step, so the tool says nothing (no CHECK lines).
#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <string>
#include <vector>

void cpp_autocast_set_enabled(bool enabled) { at::autocast::set_enabled(enabled); }

void cpp_autocast_set_cpu_enabled(bool enabled) { at::autocast::set_cpu_enabled(enabled); }

bool cpp_autocast_is_enabled() { return at::autocast::is_enabled(); }

bool cpp_autocast_is_cpu_enabled() { return at::autocast::is_cpu_enabled(); }

void cpp_autocast_set_gpu_dtype(c10::ScalarType dtype) { at::autocast::set_autocast_gpu_dtype(dtype); }

c10::ScalarType cpp_autocast_get_gpu_dtype() { return at::autocast::get_autocast_gpu_dtype(); }

void cpp_autocast_clear_cache() { at::autocast::clear_cache(); }

int cpp_autocast_increment_nesting() { return at::autocast::increment_nesting(); }

int cpp_autocast_decrement_nesting() { return at::autocast::decrement_nesting(); }

// An FFI entry point: the setter wrapped in a try whose handler records the error for the foreign
// caller (the handler's calls are error reporting, not code of a scope).
static std::string last_error;
void ffi_autocast_set_cpu_enabled(bool enabled) {
  try {
    at::autocast::set_cpu_enabled(enabled);
  } catch (const std::exception &e) {
    last_error = e.what();
  }
}

// A setter that also sets the dtype its caller chose.
void cpp_autocast_configure(bool enabled, c10::ScalarType dtype) {
  at::autocast::set_autocast_gpu_dtype(dtype);
  at::autocast::set_enabled(enabled);
}

at::Tensor cpp_amp_update_scale_(at::Tensor &self, at::Tensor &growth_tracker,
                                 const at::Tensor &found_inf, double growth_factor,
                                 double backoff_factor, int64_t growth_interval) {
  return at::_amp_update_scale_(self, growth_tracker, found_inf, growth_factor, backoff_factor,
                                growth_interval);
}

void cpp_amp_foreach_non_finite_check_and_unscale_(std::vector<at::Tensor> self,
                                                   at::Tensor &found_inf,
                                                   const at::Tensor &inv_scale) {
  at::_amp_foreach_non_finite_check_and_unscale_(self, found_inf, inv_scale);
}

// A class of bindings: members that forward, as the R package's exported methods do.
struct AutocastState {
  void set(bool enabled) { at::autocast::set_enabled(enabled); }
  bool get() const { return at::autocast::is_enabled(); }
};
