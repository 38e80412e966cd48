// RUN: %check_amp %s %t.cpp
// WILD: a hand-written RAII guard (constructor enables and saves the previous state, destructor
// restores it) used as `Guard g;` in a block. The use is the scope; the class body is not a
// finding; the rewrite removes the guard's declaration.
#include <torch/torch.h>
#include "scaler.h"

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

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void train(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
           const torch::Tensor &target) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    AutocastGuard guard;
    // CHECK-MESSAGES: :[[@LINE-1]]:19: warning: autocast scope opened by guard 'AutocastGuard'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    // CHECK-MESSAGES-NOT: does not call at::autocast::clear_cache()
    auto output = model->forward(data);
    loss = torch::nll_loss(output, target);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}#include <amp/torch.h>{{$}}
// CHECK-FIXES: {{^}}  amp::GradScaler scaler;{{$}}
// CHECK-FIXES: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {
// CHECK-FIXES-NEXT: {{^}}    auto output = amp::cast_to_adapter_tensor(amp_model->forward(data));{{$}}
// CHECK-FIXES: {{^}}    return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(optimizer, grads);{{$}}

// A guard whose destructor restores the switch but never clears the cast cache: libtorch reuses
// the weights' casts of one scope in the next, the migrated model casts afresh; noted where the
// guard's block ends.
struct NoCacheGuard {
  NoCacheGuard() { at::autocast::set_enabled(true); }
  ~NoCacheGuard() { at::autocast::set_enabled(false); }
};

void no_cache(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
              const torch::Tensor &target) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    NoCacheGuard amp_on;
    // CHECK-MESSAGES: :[[@LINE-1]]:18: warning: autocast scope opened by guard 'NoCacheGuard'{{.*}} [amp-autocast-scope]
    // CHECK-MESSAGES: :[[@LINE+2]]:3: note: the scope of guard 'amp_on' ends here, and 'NoCacheGuard' does not call at::autocast::clear_cache() when it ends: libtorch keeps the casts made of the weights in this scope{{.*}}
    loss = torch::nll_loss(model->forward(data), target);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads{{.*}} [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}void no_cache(
// CHECK-FIXES: {{^}}  auto grad_fn = amp::value_and_grad([&] {
// CHECK-FIXES-NEXT: {{^}}    loss = torch::nll_loss(amp::cast_to_adapter_tensor(amp_model->forward(data)), target);{{$}}
