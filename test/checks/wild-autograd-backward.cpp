// RUN: %check_amp %s %t.cpp
// WILD: the scaled loss backpropagated with the free function `torch::autograd::backward({...})`
// instead of `.backward()`: not taken for the step's backward (the rewrite reads the method form);
// reported with the equivalent spelling that would be migrated.
#include <torch/torch.h>
#include "scaler.h"

namespace torch {
namespace autograd {
void backward(const std::vector<torch::Tensor> &tensors);
} // namespace autograd
} // namespace torch

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void train(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler, const torch::Tensor &x,
           const torch::Tensor &y) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled{{.*}} [amp-autocast-scope]
  auto loss = torch::nll_loss(model->forward(x), y);
  at::autocast::set_enabled(false);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: note: the scope ends here
  torch::autograd::backward({scaler.scale(loss)});
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: the scaled loss is backpropagated by `torch::autograd::backward(...)`, which the rewrite does not take for a training step's backward; write it as `scaler.scale(loss).backward()` (the same computation) to have it migrated, or migrate this step by hand [amp-manual-migration]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads{{.*}} [amp-scaler-step]
  scaler.update();
}
