// RUN: %check_amp %s %t.cpp
// amp-clip-before-unscale: clipping still-scaled gradients is an existing bug. It is reported,
// the step gets an amp-manual-migration finding, and nothing is edited.
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void clip_first(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
                const torch::Tensor &target, double max_norm) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = torch::nll_loss(model->forward(data), target);
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  torch::nn::utils::clip_grad_norm_(model->parameters(), max_norm);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: clipping still-scaled gradients: no unscale_() before this clip, so max_norm is compared with the scaled norm (call unscale_ first) [amp-clip-before-unscale]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
  // CHECK-MESSAGES: :[[@LINE-3]]:3: warning: not migrated automatically: clipping still-scaled gradients (no unscale_ before it); fix the order first (amp-clip-before-unscale) [amp-manual-migration]
  scaler.unscale_(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

void clip_no_unscale(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
                     const torch::Tensor &target, double max_norm) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = torch::nll_loss(model->forward(data), target);
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  torch::nn::utils::clip_grad_norm_(model->parameters(), max_norm);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: clipping still-scaled gradients: no unscale_() before this clip, so max_norm is compared with the scaled norm (call unscale_ first) [amp-clip-before-unscale]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
  // CHECK-MESSAGES: :[[@LINE-3]]:3: warning: not migrated automatically: clipping still-scaled gradients (no unscale_ before it); fix the order first (amp-clip-before-unscale) [amp-manual-migration]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
// A clip by value before the unscale clamps scaled values.
void clip_value_no_unscale(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
                           const torch::Tensor &target) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = torch::nll_loss(model->forward(data), target);
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  torch::nn::utils::clip_grad_value_(model->parameters(), 0.1);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: clipping still-scaled gradients: no unscale_() before this clip, so the clip value is compared with scaled values (call unscale_ first) [amp-clip-before-unscale]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_value_(grads, clip_value) [amp-clip-grad-norm]
  // CHECK-MESSAGES: :[[@LINE-3]]:3: warning: not migrated automatically: clipping still-scaled gradients (no unscale_ before it); fix the order first (amp-clip-before-unscale) [amp-manual-migration]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}  torch::amp::GradScaler scaler;
// CHECK-FIXES: {{^}}  scaler.scale(loss).backward();
// CHECK-FIXES: {{^}}  scaler.scale(loss).backward();
