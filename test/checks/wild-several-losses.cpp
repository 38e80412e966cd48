// RUN: %check_amp %s %t.cpp
// WILD: several losses, each scaled and backpropagated (the first with retain_graph), before one
// unscale_/step/update per optimizer: PyTorch's "multiple models, losses and optimizers" pattern.
// `.grad` held the sum of their grads, the grad of the sum of the scaled losses: the function
// handed to value_and_grad returns that sum. Backwards that are not consecutive statements of one
// block (something runs between them) are reported, not rewritten.
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void two_losses(Net &model0, Net &model1, torch::optim::SGD &optimizer0, torch::optim::SGD &optimizer1,
                const torch::Tensor &data, const torch::Tensor &target, int epochs) {
  torch::amp::GradScaler scaler;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    optimizer0.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant{{.*}} [amp-zero-grad]
    optimizer1.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant{{.*}} [amp-zero-grad]
    torch::Tensor loss0, loss1;
    {
      at::autocast::set_enabled(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
      auto output0 = model0->forward(data);
      auto output1 = model1->forward(data);
      loss0 = torch::mse_loss(output0 * 2 + output1 * 3, target);
      loss1 = torch::mse_loss(output0 * 3 - output1 * 5, target);
      at::autocast::set_enabled(false);
    }
    scaler.scale(loss0).backward({}, /*retain_graph=*/true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
    // Both losses train both models.
    scaler.scale(loss1).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
    scaler.unscale_(optimizer0);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: unscale_() without explicit grads{{.*}} [amp-scaler-unscale]
    torch::nn::utils::clip_grad_norm_(optimizer0.parameters(), 1.0);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: {{.*}} [amp-clip-grad-norm]
    scaler.step(optimizer0);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler.step(optimizer1);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler.update();
    float total = loss0.item<float>() + loss1.item<float>();
    (void)total;
  }
}
// CHECK-FIXES: {{^}}  amp::GradScaler scaler;
// CHECK-FIXES-NEXT: {{^}}  auto amp_model0 = amp::auto_mixed_precision(model0, amp::Level::O2, torch::kCUDA);
// CHECK-FIXES-NEXT: {{^}}  auto amp_model1 = amp::auto_mixed_precision(model1, amp::Level::O2, torch::kCUDA);
// CHECK-FIXES-NEXT: {{^}}  for (int epoch = 0; epoch < epochs; ++epoch) {
// CHECK-FIXES-NEXT: {{^}}    torch::Tensor loss0, loss1;
// CHECK-FIXES-NEXT: {{^}}    auto grad_fn = amp::value_and_grad([&] {
// CHECK-FIXES: {{^}}      auto output0 = amp::cast_to_adapter_tensor(amp_model0->forward(data));
// CHECK-FIXES-NEXT: {{^}}      auto output1 = amp::cast_to_adapter_tensor(amp_model1->forward(data));
// CHECK-FIXES-NEXT: {{^}}      loss0 = torch::mse_loss(output0 * 2 + output1 * 3, target);
// CHECK-FIXES-NEXT: {{^}}      loss1 = torch::mse_loss(output0 * 3 - output1 * 5, target);
// CHECK-FIXES-NEXT: {{^}}      return scaler.scale(loss0) + scaler.scale(loss1);
// CHECK-FIXES-NEXT: {{^}}    }, amp::parameters_of(optimizer0, optimizer1));
// CHECK-FIXES-NEXT: {{^}}    auto [scaled_loss, grads] = grad_fn();
// CHECK-FIXES-NEXT: {{^}}    auto [grads_optimizer0, grads_optimizer1] = amp::split_grads(grads, optimizer0, optimizer1);
// CHECK-FIXES: {{^}}    // Both losses train both models.
// CHECK-FIXES: {{^}}    scaler.unscale_(optimizer0, grads_optimizer0);
// CHECK-FIXES: {{^}}    amp::clip_by_global_norm_(grads_optimizer0, 1.0);
// CHECK-FIXES: {{^}}    scaler.step(optimizer0, grads_optimizer0);
// CHECK-FIXES: {{^}}    scaler.step(optimizer1, grads_optimizer1);
// CHECK-FIXES: {{^}}    float total = loss0.item<float>() + loss1.item<float>();

void unrolled(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &a, const torch::Tensor &b,
              const torch::Tensor &target) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss_a, loss_b;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
    loss_a = torch::mse_loss(model->forward(a), target);
    loss_b = torch::mse_loss(model->forward(b), target);
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss_a).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
  torch::Tensor seen = loss_a.detach();
  scaler.scale(loss_b).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: several scaled backward calls share one scaler and are not consecutive `scaler.scale(loss).backward()` statements of one block (unrolled gradient accumulation?); not rewritten automatically [amp-manual-migration]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads{{.*}} [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}void unrolled(
// CHECK-FIXES: {{^}}  torch::amp::GradScaler scaler;
// CHECK-FIXES: {{^}}  scaler.scale(loss_a).backward();
// CHECK-FIXES: {{^}}  scaler.scale(loss_b).backward();
