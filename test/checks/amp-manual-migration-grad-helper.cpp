// RUN: %check_amp %s %t.cpp
// A function of this file called between the backward and step() that reaches .grad by itself,
// with no parameters handed to it: a trainer's member using its model member, a helper using a
// global model. After a rewrite it would act on .grad, which the explicit grads never reach, so
// the step is reported with the call named.
#include <torch/torch.h>
#include "scaler.h"
struct NetImpl : torch::nn::Module { torch::Tensor forward(const torch::Tensor &x); };
TORCH_MODULE(Net);
Net g_model;
void scale_global_grads() {
  for (auto &p : g_model->parameters())
    p.grad().mul_(0.5);
}
struct Trainer {
  Net model;
  torch::optim::SGD opt{model->parameters(), torch::optim::SGDOptions(0.1)};
  torch::amp::GradScaler scaler;
  void clamp_grads() {
    for (auto &p : model->parameters())
      p.grad().clamp_(-1, 1);
  }
  void step(const torch::Tensor &x) {
    torch::Tensor loss;
    {
      at::autocast::set_enabled(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
      loss = model->forward(x).sum();
      at::autocast::set_enabled(false);
    }
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    clamp_grads();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: not migrated automatically: `clamp_grads()` runs 'Trainer::clamp_grads', which reads or writes .grad ({{.*}}.cpp:{{[0-9]+}}), between the scaled backward and step(); the explicit grads of amp::value_and_grad never reach .grad, so after the rewrite it would act on nothing: rewrite it onto the grads or migrate this step by hand [amp-manual-migration]
    scaler.step(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  }
};
void global_step(torch::optim::SGD &opt, torch::amp::GradScaler &scaler, const torch::Tensor &x) {
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = g_model->forward(x).sum();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scale_global_grads();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: `scale_global_grads()` runs 'scale_global_grads', which reads or writes .grad ({{.*}}.cpp:{{[0-9]+}}), between the scaled backward and step(); the explicit grads of amp::value_and_grad never reach .grad, so after the rewrite it would act on nothing: rewrite it onto the grads or migrate this step by hand [amp-manual-migration]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
