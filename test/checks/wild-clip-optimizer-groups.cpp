// RUN: %check_amp %s %t.cpp
// WILD: clips named through the optimizer's own construction. A clip of the very list the
// optimizer was built from (`model->head->parameters()` in both, a fine-tuned head) is the
// optimizer's grads: rewritten. A clip of `optimizer.parameters()`, which libtorch gives as the
// first parameter group only, of an optimizer built from several groups would cover every group
// once migrated: reported.
#include <torch/torch.h>
#include "scaler.h"
#include <vector>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
  torch::nn::Linear body{nullptr}, head{nullptr};
};
TORCH_MODULE(Net);

void same_head(Net &model, const torch::Tensor &x, const torch::Tensor &y) {
  torch::optim::SGD optimizer(model->head->parameters(), torch::optim::SGDOptions(0.1));
  torch::amp::GradScaler scaler;
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto loss = torch::nll_loss(model->forward(x), y);
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.unscale_(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
  torch::nn::utils::clip_grad_norm_(model->head->parameters(), 0.5);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

void first_group(Net &model, const torch::Tensor &x, const torch::Tensor &y) {
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(model->body->parameters());
  groups.emplace_back(model->head->parameters());
  torch::optim::SGD optimizer(groups, torch::optim::SGDOptions(0.1));
  torch::amp::GradScaler scaler;
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto loss = torch::nll_loss(model->forward(x), y);
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.unscale_(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
  torch::nn::utils::clip_grad_norm_(optimizer.parameters(), 0.5);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
  // CHECK-MESSAGES: :[[@LINE-2]]:37: warning: not migrated automatically: the clip covers `optimizer.parameters()`, which libtorch's Optimizer gives as its first parameter group only, and `optimizer` is built from parameter groups (`groups`, {{[^)]+}}): the explicit grads are every group's, so the migrated clip would cover the other groups too; migrate this step by hand [amp-manual-migration]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}  amp::clip_by_global_norm_(grads, 0.5);{{$}}
// CHECK-FIXES: {{^}}  torch::nn::utils::clip_grad_norm_(optimizer.parameters(), 0.5);{{$}}
