// RUN: %check_amp %s %t.cpp
// WILD: `for (const auto &[x, y] : data)` around the step. Before C++20 a lambda cannot capture a
// structured binding (clang warns that it is an extension, older compilers refuse), so the step
// is reported, naming the binding (red-team B v20: the rewrite captured them by [&]).
#include <torch/torch.h>
#include "scaler.h"
#include <utility>
#include <vector>

void train(torch::nn::Linear &model, torch::optim::Adam &optimizer,
           const std::vector<std::pair<torch::Tensor, torch::Tensor>> &data) {
  torch::amp::GradScaler scaler;
  for (const auto &[x, y] : data) {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
    auto loss = torch::mse_loss(model->forward(x), y);
    // CHECK-MESSAGES: :[[@LINE-1]]:48: warning: not migrated automatically: the forward region uses the structured binding 'x', which the lambda of amp::value_and_grad cannot capture before C++20: bind it to a variable first, or migrate by hand [amp-manual-migration]
    at::autocast::set_enabled(false);
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
    scaler.step(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler.update();
  }
}
// CHECK-FIXES: {{^}}    at::autocast::set_enabled(true);{{$}}
