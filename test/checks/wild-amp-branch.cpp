// RUN: %check_amp %s %t.cpp
// WILD: scaler calls in an `if (use_amp) {...} else {...}` branch (the fp32 path beside it): the
// scope and the backward are in different blocks, so the step is a manual migration, no edit.
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void train(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
           const torch::Tensor &target, bool use_amp) {
  torch::amp::GradScaler scaler(65536.0, 2.0, 0.5, 2000, use_amp);
  optimizer.zero_grad();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
  torch::Tensor loss;
  {
    if (use_amp)
      at::autocast::set_enabled(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
      // CHECK-MESSAGES: :[[@LINE-2]]:7: warning: not migrated automatically: the autocast scope and the scaled backward are in different blocks [amp-manual-migration]
    loss = torch::nll_loss(model->forward(data), target);
    if (use_amp)
      at::autocast::set_enabled(false);
  }
  if (use_amp) {
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  } else {
    loss.backward();
    optimizer.step();
  }
}
// CHECK-FIXES: {{^}}  torch::amp::GradScaler scaler(65536.0, 2.0, 0.5, 2000, use_amp);
// CHECK-FIXES: {{^}}    scaler.scale(loss).backward();
