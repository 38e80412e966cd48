// RUN: %check_amp %s %t.cpp
// WILD: a module training itself (`this->forward`, a member scaler: the conversion is of *this,
// idempotent per module), and autocast switched on once, globally, at start-up (a leak, and a
// manual migration: convert the model where it is created).
#include <torch/torch.h>
#include "scaler.h"

struct ClassifierImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
  void train_step(torch::optim::Optimizer &opt, torch::amp::GradScaler &scaler,
                  const torch::Tensor &x, const torch::Tensor &y);
  torch::amp::GradScaler own_scaler;
  void train_step2(torch::optim::Optimizer &opt, const torch::Tensor &x, const torch::Tensor &y);
};
TORCH_MODULE(Classifier);

void ClassifierImpl::train_step2(torch::optim::Optimizer &opt, const torch::Tensor &x,
                                 const torch::Tensor &y) {
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = torch::cross_entropy(this->forward(x), y);
    at::autocast::set_enabled(false);
  }
  own_scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  own_scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  own_scaler.update();
}

int main() {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast is enabled here and never disabled; it stays on for backward and every later step (braces do not end it) [amp-autocast-leak]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE-3]]:3: warning: not migrated automatically: autocast is enabled with no training step in this function (a global or start-up switch?); convert the model where it is created with amp::auto_mixed_precision [amp-manual-migration]
  at::autocast::set_autocast_gpu_dtype(at::kHalf);
  Classifier model;
  return 0;
}
// CHECK-FIXES: {{^}}#include <amp/torch.h>{{$}}
// CHECK-FIXES: {{^}}  amp::GradScaler own_scaler;{{$}}
// CHECK-FIXES: {{^}}  auto amp_self = amp::auto_mixed_precision(*this, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {
// CHECK-FIXES-NEXT: {{^}}    loss = torch::cross_entropy(amp::cast_to_adapter_tensor(amp_self->forward(x)), y);{{$}}
// CHECK-FIXES-NEXT: {{^}}    return own_scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(opt));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  own_scaler.step(opt, grads);{{$}}
