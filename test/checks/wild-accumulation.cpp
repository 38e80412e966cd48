// RUN: %check_amp %s %t.cpp
// WILD: gradient accumulation, several `scale(loss / k).backward()` before one unscale_/step/update:
// in a nested micro-batch loop, or every iteration of a loop whose step() runs every k-th time
// (test/driver/accumulate-conditional-step.cpp). The grads of each micro-step are summed into a
// list that lives where .grad did; zero_grad() clears it. Several optimizers sharing one scaler:
// test/checks/wild-multi-optimizer.cpp.
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

// One optimizer step from k micro-batches, no outer loop: the list is declared before the loop.
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
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  }
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}  amp::GradScaler scaler;
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);
// CHECK-FIXES-NEXT: {{^}}  std::vector<torch::Tensor> grads;
// CHECK-FIXES-NEXT: {{^}}  for (int i = 0; i < k; ++i) {
// CHECK-FIXES-NEXT: {{^}}    torch::Tensor loss;
// CHECK-FIXES-NEXT: {{^}}    auto grad_fn = amp::value_and_grad([&] {
// CHECK-FIXES: {{^}}      loss = torch::nll_loss(amp::cast_to_adapter_tensor(amp_model->forward(data)), target);
// CHECK-FIXES-NEXT: {{^}}      return scaler.scale(loss / k);
// CHECK-FIXES-NEXT: {{^}}    }, amp::parameters_of(optimizer));
// CHECK-FIXES-NEXT: {{^}}    auto [scaled_loss, micro_grads] = grad_fn();
// CHECK-FIXES-NEXT: {{^}}    amp::accumulate_grads(grads, micro_grads);
// CHECK-FIXES: {{^}}  scaler.step(optimizer, grads);
// CHECK-FIXES: {{^}}  scaler.update();

// The usual shape: an epoch loop, zero_grad() first, a micro-batch loop, unscale_/clip/step/update.
// The list lives across the whole loop (as .grad does); zero_grad() becomes its clear().
void accumulate_epochs(torch::Tensor data, torch::Tensor target, int steps, int micro) {
  Net model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
  torch::amp::GradScaler scaler;
  for (int step = 0; step < steps; ++step) {
    optimizer.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() ends a gradient accumulation: with explicit gradients it clears the summed grads list instead (grads.clear()) [amp-zero-grad]
    float total = 0;
    for (int m = 0; m < micro; ++m) {
      at::autocast::set_enabled(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
      auto loss = torch::nll_loss(model->forward(data), target) / micro;
      at::autocast::set_enabled(false);
      scaler.scale(loss).backward();
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
      total += loss.item<float>();
    }
    scaler.unscale_(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: unscale_() without explicit grads{{.*}} [amp-scaler-unscale]
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: {{.*}} [amp-clip-grad-norm]
    scaler.step(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler.update();
    (void)total;
  }
}
// CHECK-FIXES: {{^}}  amp::GradScaler scaler;
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);
// CHECK-FIXES-NEXT: {{^}}  std::vector<torch::Tensor> grads;
// CHECK-FIXES-NEXT: {{^}}  for (int step = 0; step < steps; ++step) {
// CHECK-FIXES-NEXT: {{^}}    grads.clear();
// CHECK-FIXES: {{^}}    for (int m = 0; m < micro; ++m) {
// CHECK-FIXES-NEXT: {{^}}      torch::Tensor loss;
// CHECK-FIXES-NEXT: {{^}}      auto grad_fn = amp::value_and_grad([&] {
// CHECK-FIXES: {{^}}        loss = torch::nll_loss(amp::cast_to_adapter_tensor(amp_model->forward(data)), target) / micro;
// CHECK-FIXES-NEXT: {{^}}        return scaler.scale(loss);
// CHECK-FIXES-NEXT: {{^}}      }, amp::parameters_of(optimizer));
// CHECK-FIXES-NEXT: {{^}}      auto [scaled_loss, micro_grads] = grad_fn();
// CHECK-FIXES-NEXT: {{^}}      amp::accumulate_grads(grads, micro_grads);
// CHECK-FIXES: {{^}}      total += loss.item<float>();
// CHECK-FIXES: {{^}}    scaler.unscale_(optimizer, grads);
// CHECK-FIXES: {{^}}    amp::clip_by_global_norm_(grads, 1.0);
// CHECK-FIXES: {{^}}    scaler.step(optimizer, grads);

// A micro-step whose backward runs only under a condition: how many micro-steps are summed would
// depend on the data, so the step is reported, not rewritten.
void accumulate_some(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
                     const torch::Tensor &target, int k) {
  torch::amp::GradScaler scaler;
  for (int i = 0; i < k; ++i) {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
    auto loss = torch::nll_loss(model->forward(data), target);
    at::autocast::set_enabled(false);
    if (loss.item<float>() > 0) {
      scaler.scale(loss).backward();
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: not migrated automatically: the scaled backward is in a nested block under a condition and step() is outside it; the grads of a varying number of micro-steps would be summed, not rewritten automatically [amp-manual-migration]
      // CHECK-MESSAGES: :[[@LINE-2]]:7: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
    }
  }
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads{{.*}} [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}void accumulate_some(
// CHECK-FIXES: {{^}}  torch::amp::GradScaler scaler;
// CHECK-FIXES: {{^}}      scaler.scale(loss).backward();
// CHECK-FIXES: {{^}}  scaler.step(optimizer);
