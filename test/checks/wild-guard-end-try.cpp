// RUN: %check_amp %s %t.cpp
// WILD: a guard taking the state as an argument, with an early End(); and a 2.4+ pair with the
// device in a variable whose disable sits after a try block (and in its catch).
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

class AutocastGuard {
public:
  explicit AutocastGuard(bool on) : prev_(at::autocast::is_enabled()) { at::autocast::set_enabled(on); }
  ~AutocastGuard() { End(); }
  void End() { at::autocast::set_enabled(prev_); }

private:
  bool prev_;
};

void guard_end(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
               const torch::Tensor &target) {
  torch::amp::GradScaler scaler;
  AutocastGuard guard(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:17: warning: autocast scope opened by guard 'AutocastGuard'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto output = model->forward(data);
  auto loss = torch::nll_loss(output, target);
  guard.End();
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

void try_disable(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
                 const torch::Tensor &target, c10::DeviceType dev) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  at::autocast::set_autocast_enabled(dev, true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_autocast_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  try {
    loss = torch::nll_loss(model->forward(data), target);
  } catch (...) {
    at::autocast::set_autocast_enabled(dev, false);
    throw;
  }
  at::autocast::set_autocast_enabled(dev, false);
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

// A disable on the normal path before the backward, and another in a handler that skips the batch:
// the scope ends at the first; the handler's goes with it.
void catch_skip(Net &model, torch::optim::SGD &optimizer, const std::vector<torch::Tensor> &batches,
                const torch::Tensor &target) {
  torch::amp::GradScaler scaler;
  for (const auto &data : batches) {
    try {
      at::autocast::set_enabled(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
      auto loss = torch::nll_loss(model->forward(data), target);
      at::autocast::set_enabled(false);
      scaler.scale(loss).backward();
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
      scaler.step(optimizer);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
      scaler.update();
    } catch (const std::exception &) {
      at::autocast::set_enabled(false);
      continue;
    }
  }
}
// CHECK-FIXES: {{^}}#include <amp/torch.h>{{$}}
// CHECK-FIXES: {{^}}  amp::GradScaler scaler;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {
// CHECK-FIXES-NEXT: {{^}}    auto output = amp::cast_to_adapter_tensor(amp_model->forward(data));{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto loss = torch::nll_loss(output, target);{{$}}
// CHECK-FIXES-NEXT: {{^}}    return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(optimizer, grads);{{$}}
// CHECK-FIXES: {{^}}  amp::GradScaler scaler;{{$}}
// CHECK-FIXES: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {
// CHECK-FIXES-NEXT: {{^}}    try {
// CHECK-FIXES-NEXT: {{^}}      loss = torch::nll_loss(amp::cast_to_adapter_tensor(amp_model->forward(data)), target);{{$}}
// CHECK-FIXES-NEXT: {{^}}    } catch (...) {
// CHECK-FIXES-NEXT: {{^}}      throw;{{$}}
// CHECK-FIXES-NEXT: {{^}}    }
// CHECK-FIXES-NEXT: {{^}}    return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(optimizer, grads);{{$}}
// CHECK-FIXES: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  for (const auto &data : batches) {{{$}}
// CHECK-FIXES-NEXT: {{^}}    try {{{$}}
// CHECK-FIXES-NEXT: {{^}}      auto grad_fn = amp::value_and_grad([&] {
// CHECK-FIXES-NEXT: {{^}}        auto loss = torch::nll_loss(amp::cast_to_adapter_tensor(amp_model->forward(data)), target);{{$}}
// CHECK-FIXES-NEXT: {{^}}        return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}      }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}      auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}      scaler.step(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}      scaler.update();{{$}}
// CHECK-FIXES-NEXT: {{^}}    } catch (const std::exception &) {{{$}}
// CHECK-FIXES-NEXT: {{^}}      continue;{{$}}
// CHECK-FIXES-NEXT: {{^}}    }
