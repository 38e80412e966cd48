// REQUIRES: libtorch
// RUN: %check_amp_real %s %t.cpp --level=O1 --rules=%S/Inputs/fp32-region-rules.yaml -- -isystem %torch_include -I %amp_torch_include -I %amp_runtime_include
// WILD (issue 38, item 7): false findings on code that is no scope, over real libtorch headers.
// A setter that logs and then forwards its parameter to autocast opens no scope (the caller's
// calls of it do), and a guard that turns autocast off for an fp32 region inside a scope is no
// scope of its own: a class whose constructor keeps the switch in a member (as at::autocast's
// `enabled` argument), and a guard class the rules name whose constructor is out of sight.
#include <ATen/autocast_mode.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>
#include <iostream>

void log_line(const char *what);

void set_gpu_enabled(bool e) {
  log_line("autocast");
  at::autocast::set_enabled(e);
}

struct AmpSwitch {
  bool on = false;
  void set(bool e) {
    on = e;
    std::cerr << "autocast " << e << "\n";
    at::autocast::set_enabled(e);
  }
};

// Doing work after forwarding the flag is a scope of this function, as before.
void train_flagged(torch::nn::Linear &model, bool use_amp, const torch::Tensor &x) {
  log_line("forward");
  at::autocast::set_enabled(use_amp);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast is enabled here and never disabled{{.*}} [amp-autocast-leak]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE-3]]:3: warning: not migrated automatically: autocast is enabled with no training step in this function{{.*}} [amp-manual-migration]
  model(x);
}

class AutocastMode {
public:
  explicit AutocastMode(bool enabled = true) : enabled_(enabled), prev_(at::autocast::is_enabled()) {
    at::autocast::set_enabled(enabled_);
    at::autocast::increment_nesting();
  }
  ~AutocastMode() {
    if (at::autocast::decrement_nesting() == 0)
      at::autocast::clear_cache();
    at::autocast::set_enabled(prev_);
  }

private:
  bool enabled_;
  bool prev_;
};

float member_switch(torch::nn::Linear &model, torch::optim::SGD &optimizer, const torch::Tensor &x,
                    const torch::Tensor &y) {
  torch::Tensor loss;
  {
    AutocastMode autocast;
    // CHECK-MESSAGES: :[[@LINE-1]]:18: warning: autocast scope opened by guard 'AutocastMode'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    // CHECK-MESSAGES: :[[@LINE+6]]:3: note: the loss computed in this scope is backpropagated here, with no loss scaler; the step becomes amp::value_and_grad and amp::step(optimizer, grads)
    auto out = model(x);
    AutocastMode fp32(false);
    // CHECK-MESSAGES: :[[@LINE-1]]:18: warning: guard 'AutocastMode' disables autocast for a nested region; under amp::auto_mixed_precision the region's precision follows the converted model [amp-autocast-scope]
    loss = torch::mse_loss(out.to(torch::kFloat), y);
  }
  loss.backward();
  optimizer.step();
  return loss.item<float>();
}
// CHECK-FIXES: {{^}}  torch::Tensor loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto out = amp::cast_to_adapter_tensor(amp_model(x));{{$}}
// CHECK-FIXES-NEXT: {{^}}    AutocastMode fp32(false);{{$}}
// CHECK-FIXES-NEXT: {{^}}    loss = torch::mse_loss(out.to(torch::kFloat), y);{{$}}
// CHECK-FIXES-NEXT: {{^}}    return loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [loss_value, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::step(optimizer, grads);{{$}}

namespace corp {
class MixedPrecision {
public:
  MixedPrecision();
  ~MixedPrecision();
};
class AutocastRegion {
public:
  explicit AutocastRegion(bool enabled);
  ~AutocastRegion();
};
} // namespace corp

void rules_guards(torch::nn::Linear &model, torch::optim::SGD &optimizer, const torch::Tensor &x,
                  const torch::Tensor &y) {
  torch::Tensor loss;
  {
    corp::MixedPrecision amp;
    // CHECK-MESSAGES: :[[@LINE-1]]:26: warning: autocast scope opened by guard 'corp::MixedPrecision'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    // CHECK-MESSAGES: :[[@LINE+6]]:3: note: the loss computed in this scope is backpropagated here, with no loss scaler; the step becomes amp::value_and_grad and amp::step(optimizer, grads)
    auto out = model->forward(x);
    corp::AutocastRegion fp32(false);
    // CHECK-MESSAGES: :[[@LINE-1]]:26: warning: guard 'corp::AutocastRegion' disables autocast for a nested region; under amp::auto_mixed_precision the region's precision follows the converted model [amp-autocast-scope]
    loss = torch::mse_loss(out.to(torch::kFloat), y);
  }
  loss.backward();
  optimizer.step();
}
// CHECK-FIXES: {{^}}void rules_guards(
// CHECK-FIXES: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto out = amp::cast_to_adapter_tensor(amp_model->forward(x));{{$}}
// CHECK-FIXES-NEXT: {{^}}    corp::AutocastRegion fp32(false);{{$}}

// The same guard class turning autocast on is a scope.
void rules_guard_on(torch::nn::Linear &model, const torch::Tensor &x) {
  corp::AutocastRegion amp(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:24: warning: autocast scope opened by guard 'corp::AutocastRegion' in inference code{{.*}} [amp-autocast-inference]
  model(x);
}
