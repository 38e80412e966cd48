// RUN: %check_amp %s %t.cpp
// A loop that puts new tensors in place of the grads (`p.mutable_grad() = p.grad() * k;`): before
// unscale_() it carries over to the explicit grads like any loop; after unscale_() it would hand
// step() grads that unscale_() never saw, which amp::GradScaler::step refuses at run time (it takes
// only the unscaled grads, changed in place, or their clip), so the step is reported.
#include <torch/torch.h>
#include "scaler.h"
struct NetImpl : torch::nn::Module { torch::Tensor forward(const torch::Tensor &x); };
TORCH_MODULE(Net);
void replace_after_unscale(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler, const torch::Tensor &x) {
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = model->forward(x).sum();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.unscale_(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
  for (auto &p : model->parameters())
    p.mutable_grad() = p.grad() * 0.25;
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: not migrated automatically: `for (auto &p : model->parameters()) ...` puts a new tensor in place of each grad after unscale_(); amp::GradScaler::step takes only the grads unscale_() unscaled, changed in place, or their clip: change them in place (copy_, mul_, clamp_) or migrate this step by hand [amp-manual-migration]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
void replace_before_unscale(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler, const torch::Tensor &x) {
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = model->forward(x).sum();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  for (auto &p : model->parameters())
    p.mutable_grad() = p.grad() * 0.5;
  scaler.unscale_(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}void replace_before_unscale(Net &model, torch::optim::SGD &opt, amp::GradScaler &scaler, const torch::Tensor &x) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  torch::Tensor loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}    loss = amp::cast_to_adapter_tensor(amp_model->forward(x)).sum();{{$}}
// CHECK-FIXES-NEXT: {{^}}    return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(opt));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  for (auto &p_grad : grads){{$}}
// CHECK-FIXES-NEXT: {{^}}    p_grad = p_grad * 0.5;{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.unscale_(opt, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(opt, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.update();{{$}}
// CHECK-FIXES-NEXT: {{^}}}{{$}}
