// RUN: %check_amp %s %t.cpp
// amp-clip-grad-norm over the model's parameters when the optimizer's construction is not in the
// function: the explicit grads are the optimizer's, so the clip carries over only where the
// optimizer holds the whole model. A call in this file that shows it needs nothing more; otherwise
// amp::check_holds(optimizer, params) goes before the clip (it throws amp::Error for an optimizer
// over part of the model, where the migrated norm would silently leave parameters out).
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

// Called below with an optimizer built from the same model's parameters(): proven, no check.
void shown_by_caller(Net &model, torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler,
                     const torch::Tensor &x, const torch::Tensor &y) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto loss = torch::mse_loss(model->forward(x), y);
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.unscale_(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
  torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}  scaler.unscale_(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::clip_by_global_norm_(grads, 1.0);{{$}}

void caller(const torch::Tensor &x, const torch::Tensor &y) {
  Net net;
  torch::optim::SGD sgd(net->parameters(), 0.1);
  torch::amp::GradScaler scaler;
  for (int i = 0; i < 3; ++i)
    shown_by_caller(net, sgd, scaler, x, y);
}

// No call in sight: the clip carries over with the check in front of it.
void not_shown(Net &model, torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler,
               const torch::Tensor &x, const torch::Tensor &y) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto loss = torch::mse_loss(model->forward(x), y);
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.unscale_(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
  const double norm = torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
  // CHECK-MESSAGES: :[[@LINE-1]]:23: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
  (void)norm;
}
// CHECK-FIXES: {{^}}  scaler.unscale_(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::check_holds(optimizer, model->parameters());{{$}}
// CHECK-FIXES-NEXT: {{^}}  const double norm = amp::clip_by_global_norm_(grads, 1.0).item<double>();{{$}}

// The clip is the body of an `if` without braces: the check has no statement of its own to go
// in, so the step is left for a person, with the reason.
void braceless(Net &model, torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler,
               const torch::Tensor &x, const torch::Tensor &y, bool clip) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto loss = torch::mse_loss(model->forward(x), y);
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.unscale_(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
  if (clip)
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
  // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
  // CHECK-MESSAGES: :[[@LINE-2]]:39: warning: not migrated automatically: the clip covers `model->parameters()`, and what the optimizer `optimizer` holds is not in sight (no call of `braceless` in this translation unit shows it): the explicit grads are the optimizer's parameters', so the migrated clip's norm would leave out every parameter of the model the optimizer does not hold, which clip_grad_norm_ counts; clip `optimizer.parameters()` if the optimizer holds the whole model, or migrate this step by hand (the check that it does would go before the clip's statement, which is the body of a statement without braces) [amp-manual-migration]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}  if (clip){{$}}
// CHECK-FIXES-NEXT: {{^}}    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);{{$}}
