// RUN: %check_amp %s %t.cpp
// Gradient accumulation across loop iterations (step every 4th iteration): the grads of each
// iteration are summed into a list declared before the loop, step() takes the sum, and
// zero_grad() after it clears the list, as it cleared .grad. With the optimizer declared inside
// the loop the list has no place to live: reported, not rewritten.
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
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: step() without explicit grads{{.*}} [amp-scaler-step]
      scaler.update();
      opt.zero_grad();
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: zero_grad() ends a gradient accumulation{{.*}} [amp-zero-grad]
    }
  }
}
// CHECK-FIXES: {{^}}  amp::GradScaler scaler;
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);
// CHECK-FIXES-NEXT: {{^}}  std::vector<torch::Tensor> grads;
// CHECK-FIXES-NEXT: {{^}}  for (int i = 0; i < 100; ++i) {
// CHECK-FIXES-NEXT: {{^}}    auto grad_fn = amp::value_and_grad([&] {
// CHECK-FIXES: {{^}}      auto loss = torch::mse_loss(amp::cast_to_adapter_tensor(amp_model(xs[i])), y) / 4;
// CHECK-FIXES-NEXT: {{^}}      return scaler.scale(loss);
// CHECK-FIXES-NEXT: {{^}}    }, amp::parameters_of(opt));
// CHECK-FIXES-NEXT: {{^}}    auto [scaled_loss, micro_grads] = grad_fn();
// CHECK-FIXES-NEXT: {{^}}    amp::accumulate_grads(grads, micro_grads);
// CHECK-FIXES: {{^}}    if ((i + 1) % 4 == 0) {
// CHECK-FIXES-NEXT: {{^}}      scaler.step(opt, grads);
// CHECK-FIXES: {{^}}      scaler.update();
// CHECK-FIXES-NEXT: {{^}}      grads.clear();

void fresh_optimizer(torch::nn::Linear model, std::vector<torch::Tensor> xs, torch::Tensor y) {
  torch::amp::GradScaler scaler;
  for (int i = 0; i < 100; ++i) {
    torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
    auto loss = torch::mse_loss(model(xs[i]), y) / 4;
    at::autocast::set_enabled(false);
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
    if ((i + 1) % 4 == 0) {
      scaler.step(opt);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: not migrated automatically: step() runs conditionally in a loop (gradient accumulation across iterations) but the optimizer is declared inside the loop; the summed grads have no place to live [amp-manual-migration]
      // CHECK-MESSAGES: :[[@LINE-2]]:7: warning: step() without explicit grads{{.*}} [amp-scaler-step]
      scaler.update();
    }
  }
}
// CHECK-FIXES: {{^}}void fresh_optimizer(
// CHECK-FIXES-NEXT: {{^}}  torch::amp::GradScaler scaler;
// CHECK-FIXES: {{^}}    at::autocast::set_enabled(true);
// CHECK-FIXES: {{^}}      scaler.step(opt);
