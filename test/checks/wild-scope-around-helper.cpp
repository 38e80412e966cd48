// RUN: %check_amp %s %t.cpp
// WILD: the autocast scope in the step, the forward in a helper it calls (`loss = compute_loss(batch)`,
// often a virtual member a derived trainer overrides). The model the helper runs is not known
// here: removing the scope and converting nothing would train in fp32, so the step is reported,
// naming the call (red-team A v03c, v15).
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

class Trainer {
public:
  float train_step(const torch::Tensor &x, const torch::Tensor &y) {
    optimizer_.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() clears the .grad that this step's backward fills{{.*}} [amp-zero-grad]
    torch::Tensor loss;
    at::autocast::set_cpu_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_cpu_enabled'{{.*}} [amp-autocast-scope]
    // CHECK-MESSAGES: :[[@LINE-2]]:5: warning: not migrated automatically: no forward of a model runs in the autocast scope itself (it calls `compute_loss(x, y)`, whose forward would run in fp32 once the scope is gone); the model to convert is not known: migrate this step by hand [amp-manual-migration]
    loss = compute_loss(x, y);
    at::autocast::set_cpu_enabled(false);
    loss.backward();
    optimizer_.step();
    return loss.item<float>();
  }

  float scaled_step(const torch::Tensor &x, const torch::Tensor &y) {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
    // CHECK-MESSAGES: :[[@LINE-2]]:5: warning: not migrated automatically: no forward of a model runs in the autocast scope itself (it calls `compute_loss(x, y)`{{.*}} [amp-manual-migration]
    auto loss = compute_loss(x, y);
    at::autocast::set_enabled(false);
    scaler_.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly{{.*}} [amp-scaler-implicit-grad]
    scaler_.step(optimizer_);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler_.update();
    return loss.item<float>();
  }

protected:
  virtual torch::Tensor compute_loss(const torch::Tensor &x, const torch::Tensor &y) {
    return torch::nll_loss(model_->forward(x), y);
  }

  Net model_;
  torch::optim::SGD optimizer_{model_->parameters(), torch::optim::SGDOptions(0.1)};
  torch::amp::GradScaler scaler_;
};
// CHECK-FIXES: {{^}}    at::autocast::set_cpu_enabled(true);{{$}}
// CHECK-FIXES-NEXT: {{^}}    loss = compute_loss(x, y);{{$}}
// CHECK-FIXES: {{^}}    at::autocast::set_enabled(true);{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto loss = compute_loss(x, y);{{$}}
// CHECK-FIXES-NEXT: {{^}}    at::autocast::set_enabled(false);{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler_.scale(loss).backward();{{$}}
