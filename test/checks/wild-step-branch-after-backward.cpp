// RUN: %check_amp %s %t.cpp
// WILD: the scaled backward runs always (a disabled scaler's scale() is the identity) and only the
// steps are chosen by the flag: `if (use_amp) { scaler.step(opt); scaler.update(); } else
// { opt.step(); }`. The else's step reads .grad, which the explicit grads never reach: reported
// (it was left as it was, and the fp32 path stopped training: red-team B v24).
#include <torch/torch.h>
#include "scaler.h"

void train(torch::nn::Linear &model, torch::optim::Adam &optimizer, bool use_amp,
           const torch::Tensor &x, const torch::Tensor &y) {
  torch::amp::GradScaler scaler;
  for (int step = 0; step < 5; ++step) {
    optimizer.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad(){{.*}} [amp-zero-grad]
    at::autocast::set_enabled(use_amp);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
    auto loss = torch::mse_loss(model->forward(x), y);
    at::autocast::set_enabled(false);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: note: the scope ends here{{.*}}
    at::autocast::clear_cache();
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
    scaler.unscale_(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: unscale_() without explicit grads{{.*}} [amp-scaler-unscale]
    if (use_amp) {
      scaler.step(optimizer);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: step() without explicit grads{{.*}} [amp-scaler-step]
      scaler.update();
    } else {
      optimizer.step();
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: not migrated automatically: `optimizer.step()` steps the optimizer on .grad after the step ({{.*}}:[[#@LINE-1]]; the fp32 path of the same backward?); the explicit grads of amp::value_and_grad never reach .grad, so it would step on none: migrate this step by hand [amp-manual-migration]
    }
  }
}
// CHECK-FIXES: {{^}}    scaler.scale(loss).backward();{{$}}
// CHECK-FIXES: {{^}}      optimizer.step();{{$}}
