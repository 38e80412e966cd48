// RUN: %check_amp %s %t.cpp
// WILD: the 2.4+ API, set_autocast_enabled(device, bool) and set_autocast_dtype(device, dtype),
// with the device spelled at::kCUDA and torch::kCUDA.
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void train(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
           const torch::Tensor &target) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_autocast_enabled(at::kCUDA, true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_autocast_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    at::autocast::set_autocast_dtype(torch::kCUDA, at::kHalf);
    auto output = model->forward(data);
    loss = torch::nll_loss(output, target);
    at::autocast::set_autocast_enabled(torch::kCUDA, false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}#include <amp/torch.h>{{$}}
// CHECK-FIXES: {{^}}  amp::GradScaler scaler;{{$}}
// CHECK-FIXES: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, at::kHalf, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {
// CHECK-FIXES-NEXT: {{^}}    auto output = amp::cast_to_adapter_tensor(amp_model->forward(data));{{$}}
// CHECK-FIXES: {{^}}    return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(optimizer, grads);{{$}}

// torch.autocast's __enter__/__exit__ written inline: the previous state and dtype saved, bf16 set,
// both restored after the forward. The restoring dtype call comes after the scope is closed and is
// not the scope's dtype (it was taken for a second one: red-team C v16).
float inline_save_restore(Net &model, torch::optim::Adam &opt, const torch::Tensor &x,
                          const torch::Tensor &y, at::DeviceType dev) {
  const bool prev_enabled = at::autocast::is_autocast_enabled(dev);
  const auto prev_dtype = at::autocast::get_autocast_dtype(dev);
  at::autocast::set_autocast_dtype(dev, at::kBFloat16);
  at::autocast::set_autocast_enabled(dev, true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_autocast_enabled'{{.*}} [amp-autocast-scope]
  auto loss = torch::mse_loss(model->forward(x), y);
  at::autocast::set_autocast_enabled(dev, prev_enabled);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: note: the scope ends here{{.*}}
  at::autocast::set_autocast_dtype(dev, prev_dtype);
  loss.backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: note: the loss computed in this scope is backpropagated here{{.*}}
  opt.step();
  return loss.item<float>();
}
// CHECK-FIXES: {{^}}float inline_save_restore(Net &model, torch::optim::Adam &opt, const torch::Tensor &x,{{$}}
// CHECK-FIXES: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, at::kBFloat16);{{$}}
// CHECK-FIXES: {{^}}  amp::step(opt, grads);{{$}}
