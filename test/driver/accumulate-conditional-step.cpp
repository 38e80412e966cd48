// RUN: %check_amp %s %t.cpp
// Gradient accumulation across loop iterations (step every 4th iteration): reported as a manual
// migration, never half-migrated (the explicit grads would hold only the last micro-step).
#include <torch/torch.h>
#include "scaler.h"
void train(torch::nn::Linear model, torch::optim::SGD &opt, std::vector<torch::Tensor> xs, torch::Tensor y) {
  torch::amp::GradScaler scaler;
  for (int i = 0; i < 100; ++i) {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
    auto loss = torch::mse_loss(model(xs[i]), y) / 4;
    at::autocast::set_enabled(false);
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
    if ((i + 1) % 4 == 0) {
      scaler.step(opt);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: not migrated automatically: step() runs conditionally after an unconditional scaled backward in a loop (gradient accumulation across iterations){{.*}} [amp-manual-migration]
      // CHECK-MESSAGES: :[[@LINE-2]]:7: warning: step() without explicit grads{{.*}} [amp-scaler-step]
      scaler.update();
      opt.zero_grad();
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: zero_grad() is redundant{{.*}} [amp-zero-grad]
    }
  }
}
// CHECK-FIXES: {{^}}  torch::amp::GradScaler scaler;
// CHECK-FIXES: {{^}}    at::autocast::set_enabled(true);
// CHECK-FIXES: {{^}}      scaler.step(opt);
