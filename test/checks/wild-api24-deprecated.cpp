// REQUIRES: libtorch2
// RUN: %check_amp_real %s %t.cpp -- %torch2_flags
// WILD: PyTorch 2.4 deprecated the device-specific autocast functions (set_enabled,
// set_cpu_enabled, set_autocast_gpu_dtype, ...) in favour of set_autocast_enabled(device, on)
// and set_autocast_dtype(device, dtype). Over real libtorch 2.x headers, where the old names are
// inline wrappers of the new ones, both spellings resolve, and a scope opened with one and closed
// with the other is one scope.
#include <ATen/autocast_mode.h>
#include <torch/nn/module.h>

struct Net : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};

torch::Tensor deprecated_names(Net &model, const torch::Tensor &x) {
  at::autocast::set_autocast_gpu_dtype(at::kHalf);
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope opened with 'at::autocast::set_enabled' in inference code: no backward() runs in this function, in any function of this file that calls it, or on what it returns, so there is no training step to migrate; keep the scope for inference, or convert the model once with amp::auto_mixed_precision where it is created [amp-autocast-inference]
  // No backward() reaches this scope: inference, not a step to migrate by hand.
  torch::Tensor y = model.forward(x);
  at::autocast::set_enabled(false);
  return y;
}

torch::Tensor deprecated_cpu_names(Net &model, const torch::Tensor &x) {
  at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
  at::autocast::set_cpu_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope opened with 'at::autocast::set_cpu_enabled' in inference code: no backward() runs in this function, in any function of this file that calls it, or on what it returns, so there is no training step to migrate; keep the scope for inference, or convert the model once with amp::auto_mixed_precision where it is created [amp-autocast-inference]
  // No backward() reaches this scope: inference, not a step to migrate by hand.
  torch::Tensor y = model.forward(x);
  at::autocast::set_cpu_enabled(false);
  return y;
}

torch::Tensor mixed_spellings(Net &model, const torch::Tensor &x) {
  at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
  at::autocast::set_autocast_enabled(at::kCPU, true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope opened with 'at::autocast::set_autocast_enabled' in inference code: no backward() runs in this function, in any function of this file that calls it, or on what it returns, so there is no training step to migrate; keep the scope for inference, or convert the model once with amp::auto_mixed_precision where it is created [amp-autocast-inference]
  // No backward() reaches this scope: inference, not a step to migrate by hand.
  torch::Tensor y = model.forward(x);
  at::autocast::set_cpu_enabled(false);
  return y;
}

// Another device's call does not close the CUDA scope.
torch::Tensor other_device(Net &model, const torch::Tensor &x) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast is enabled here and never disabled; it stays on for backward and every later step (braces do not end it) [amp-autocast-leak]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE-3]]:3: warning: not migrated automatically: autocast is enabled with no training step in this function (a global or start-up switch?); convert the model where it is created with amp::auto_mixed_precision [amp-manual-migration]
  torch::Tensor y = model.forward(x);
  at::autocast::set_autocast_enabled(at::kXPU, false);
  return y;
}

// A flag parameter in a function that does more than forward it: a scope.
torch::Tensor flag_parameter(Net &model, const torch::Tensor &x, bool use_amp) {
  at::autocast::set_autocast_enabled(at::kCUDA, use_amp);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope opened with 'at::autocast::set_autocast_enabled' in inference code: no backward() runs in this function, in any function of this file that calls it, or on what it returns, so there is no training step to migrate; keep the scope for inference, or convert the model once with amp::auto_mixed_precision where it is created [amp-autocast-inference]
  // No backward() reaches this scope: inference, not a step to migrate by hand.
  torch::Tensor y = model.forward(x);
  at::autocast::set_autocast_enabled(at::kCUDA, false);
  return y;
}

// Bindings of the 2.4+ API forward their caller's device and value: no scope, no finding.
void set_autocast_enabled_binding(c10::DeviceType device, bool enabled) {
  at::autocast::set_autocast_enabled(device, enabled);
}
void set_autocast_enabled_from_string(const std::string &device, bool enabled) {
  at::autocast::set_autocast_enabled(c10::Device(device).type(), enabled);
}
bool is_autocast_enabled_binding(c10::DeviceType device) {
  return at::autocast::is_autocast_enabled(device);
}
void set_autocast_dtype_binding(c10::DeviceType device, c10::ScalarType dtype) {
  at::autocast::set_autocast_dtype(device, dtype);
}
