// RUN: %check_amp %s %t.cpp
// WILD: gradient accumulation (backward in a loop, one step after it) and several optimizers
// sharing one scaler are reported as manual migrations, never half-migrated.
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void accumulate(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
                const torch::Tensor &target, int k) {
  torch::amp::GradScaler scaler;
  for (int i = 0; i < k; ++i) {
    torch::Tensor loss;
    {
      at::autocast::set_enabled(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
      loss = torch::nll_loss(model->forward(data), target);
      at::autocast::set_enabled(false);
    }
    scaler.scale(loss / k).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: not migrated automatically: the scaled backward is in a nested block or loop and step() is outside it (gradient accumulation?); the grads of several micro-steps must be summed, not rewritten automatically [amp-manual-migration]
    // CHECK-MESSAGES: :[[@LINE-2]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  }
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

void two_optimizers(Net &gen, Net &disc, torch::optim::Adam &opt_g, torch::optim::Adam &opt_d,
                    const torch::Tensor &data, const torch::Tensor &target) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = torch::mse_loss(disc->forward(gen->forward(data)), target);
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(opt_g);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.step(opt_d);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: several optimizers step with one scaled loss; not rewritten automatically [amp-manual-migration]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}  torch::amp::GradScaler scaler;
// CHECK-FIXES: {{^}}    scaler.scale(loss / k).backward();
// CHECK-FIXES: {{^}}  scaler.step(optimizer);
// CHECK-FIXES: {{^}}  torch::amp::GradScaler scaler;
// CHECK-FIXES: {{^}}  scaler.scale(loss).backward();
