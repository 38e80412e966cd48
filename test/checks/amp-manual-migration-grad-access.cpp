// RUN: %check_amp %s %t.cpp
// Statements between the scaled backward and step() that touch .grad and cannot be carried over to
// the explicit grads (a loop that uses the parameter itself, a project helper given the
// parameters): after a rewrite they would act on nothing (the explicit grads
// never reach .grad), so the step is reported with the statement named, and nothing is edited.
// Loops that touch only each parameter's .grad are rewritten (amp-grad-loop.cpp).
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void all_reduce_grads(std::vector<torch::Tensor> params);

void per_parameter_division(Net &model, torch::optim::SGD &opt, const torch::Tensor &data, int world) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled{{.*}} [amp-autocast-scope]
    loss = model->forward(data).sum();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
  for (auto &p : model->parameters()) // average over ranks, weighted by the first dimension
    p.grad() /= world * p.size(0);
  // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: not migrated automatically: `for (auto &p : model->parameters()) // average over ranks, weighted by the first dimension ...` uses the parameter 'p' itself, not only its .grad, between the backward and step(); the explicit grads of amp::value_and_grad never reach .grad: rewrite it onto the grads or migrate this step by hand [amp-manual-migration]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads{{.*}} [amp-scaler-step]
  scaler.update();
}

void project_helper(Net &model, torch::optim::SGD &opt, const torch::Tensor &data) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled{{.*}} [amp-autocast-scope]
    loss = model->forward(data).sum();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
  scaler.unscale_(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads{{.*}} [amp-scaler-unscale]
  all_reduce_grads(model->parameters());
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: `all_reduce_grads(model->parameters())` hands the parameters (or the model or optimizer) to code that may read or write .grad between the scaled backward and step(); the explicit grads of amp::value_and_grad never reach .grad: rewrite it onto the grads or migrate this step by hand [amp-manual-migration]
  torch::nn::utils::clip_grad_value_(model->parameters(), 0.5);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_value_(grads, clip_value) [amp-clip-grad-norm]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads{{.*}} [amp-scaler-step]
  scaler.update();
}
// The report names the statement that hands over the parameters, not the `if` around it.
void nested_helper(Net &model, torch::optim::SGD &opt, const torch::Tensor &data, int step) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled{{.*}} [amp-autocast-scope]
    loss = model->forward(data).sum();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
  scaler.unscale_(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads{{.*}} [amp-scaler-unscale]
  if (step > 100) {
    all_reduce_grads(model->parameters());
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: not migrated automatically: `all_reduce_grads(model->parameters())` hands the parameters{{.*}} [amp-manual-migration]
  }
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads{{.*}} [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}  scaler.scale(loss).backward();
// CHECK-FIXES: {{^}}    p.grad() /= world * p.size(0);
// CHECK-FIXES: {{^}}  all_reduce_grads(model->parameters());
