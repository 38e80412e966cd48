// RUN: %check_amp %s %t.cpp
// WILD: a parameter's .grad read after the step in the same iteration (gradient-norm logging):
// the original's gradients are still in .grad there, explicit ones never reach it, so the
// migrated read would find none. Reported, naming the statement; a read after the next
// backward belongs to that step, and a step without such a read is rewritten.
#include <torch/torch.h>
#include "scaler.h"
#include <cstdio>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
  torch::Tensor weight;
};
TORCH_MODULE(Net);

void log_after(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &x,
               const torch::Tensor &y) {
  torch::amp::GradScaler scaler;
  for (int step = 0; step < 10; ++step) {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss = torch::nll_loss(model->forward(x), y);
    at::autocast::set_enabled(false);
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
    auto g = model->weight.grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:14: warning: not migrated automatically: `auto g = model->weight.grad();` uses .grad after the step ({{[^)]+}}), where the original's gradients still are; the explicit grads of amp::value_and_grad never reach .grad, so it would find none: read the step's grads there instead (the list of the optimizer's parameters, in order), or migrate this step by hand [amp-manual-migration]
  }
}

void no_read(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &x,
             const torch::Tensor &y) {
  torch::amp::GradScaler scaler;
  for (int step = 0; step < 10; ++step) {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss = torch::nll_loss(model->forward(x), y);
    at::autocast::set_enabled(false);
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  }
  std::printf("done\n");
}
// CHECK-FIXES: {{^}}    auto g = model->weight.grad();{{$}}
// CHECK-FIXES: {{^}}    scaler.step(optimizer, grads);{{$}}
