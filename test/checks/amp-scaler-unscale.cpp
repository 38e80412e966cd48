// RUN: %check_amp %s %t.cpp
// amp-scaler-unscale: unscale_(optimizer) before clipping takes the explicit grads.
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void step(Net &model, torch::optim::Adam &optimizer, const torch::Tensor &data,
          const torch::Tensor &target) {
  torch::amp::GradScaler scaler(1024.0);
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = torch::mse_loss(model->forward(data), target);
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.unscale_(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

void unscale_through_pointers(Net &model, torch::optim::Optimizer *opt, const torch::Tensor &data,
                              const torch::Tensor &target) {
  torch::amp::GradScaler *scaler = new torch::amp::GradScaler();
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = torch::mse_loss(model->forward(data), target);
    at::autocast::set_enabled(false);
  }
  scaler->scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler->unscale_(*opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
  torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
  scaler->step(*opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler->update();
}
// CHECK-FIXES: {{^}}#include <amp/torch.h>{{$}}
// CHECK-FIXES: {{^}}  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024.0));{{$}}
// CHECK-FIXES: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {
// CHECK-FIXES-NEXT: {{^}}    loss = torch::mse_loss(amp::cast_to_adapter_tensor(amp_model->forward(data)), target);{{$}}
// CHECK-FIXES-NEXT: {{^}}    return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.unscale_(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(optimizer, grads);{{$}}
// CHECK-FIXES: {{^}}  amp::GradScaler *scaler = new amp::GradScaler();{{$}}
// CHECK-FIXES: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {
// CHECK-FIXES-NEXT: {{^}}    loss = torch::mse_loss(amp::cast_to_adapter_tensor(amp_model->forward(data)), target);{{$}}
// CHECK-FIXES-NEXT: {{^}}    return scaler->scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(*opt));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler->unscale_(*opt, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::check_holds(*opt, model->parameters());{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::clip_by_global_norm_(grads, 1.0);{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler->step(*opt, grads);{{$}}
