// RUN: %check_amp %s %t.cpp
// The canonical step of the migration guide: 1.x autocast pair in a block, a Python-style scaler,
// clipping after unscale_. Everything is reported and the step is rewritten whole.
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void train(int epochs, double max_norm) {
  Net model;
  model->train();
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01));
  torch::amp::GradScaler scaler;
  // CHECK-FIXES: {{^}}  amp::GradScaler scaler;
  torch::Tensor data, target;
  // CHECK-FIXES: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);
  for (int epoch = 0; epoch < epochs; ++epoch) {
    optimizer.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
    torch::Tensor loss;
    {
      at::autocast::set_enabled(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
      auto output = model->forward(data);
      loss = torch::nll_loss(output, target);
      at::autocast::clear_cache();
      at::autocast::set_enabled(false);
    }
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss {{.*}} [amp-scaler-implicit-grad]
    scaler.unscale_(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: unscale_() without explicit grads{{.*}} [amp-scaler-unscale]
    torch::nn::utils::clip_grad_norm_(model->parameters(), max_norm);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: clipping the parameters' .grad inside a scaled step{{.*}} [amp-clip-grad-norm]
    scaler.step(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler.update();
    float l = loss.item<float>();
    (void)l;
  }
}
// CHECK-FIXES: {{^}}    torch::Tensor loss;
// CHECK-FIXES-NEXT: {{^}}    auto grad_fn = amp::value_and_grad([&] {
// CHECK-FIXES-NEXT: {{^}}      auto output = amp::cast_to_adapter_tensor(amp_model->forward(data));
// CHECK-FIXES-NEXT: {{^}}      loss = torch::nll_loss(output, target);
// CHECK-FIXES-NEXT: {{^}}      return scaler.scale(loss);
// CHECK-FIXES-NEXT: {{^}}    }, amp::parameters_of(optimizer));
// CHECK-FIXES-NEXT: {{^}}    auto [scaled_loss, grads] = grad_fn();
// CHECK-FIXES-NEXT: {{^}}    scaler.unscale_(optimizer, grads);
// CHECK-FIXES-NEXT: {{^}}    amp::clip_by_global_norm_(grads, max_norm);
// CHECK-FIXES-NEXT: {{^}}    scaler.step(optimizer, grads);
// CHECK-FIXES-NEXT: {{^}}    scaler.update();
