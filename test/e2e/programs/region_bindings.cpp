#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cstdio>
#include <tuple>

#include "common.h"
#include "loss_scaler.h"

// e2e before-program: declarations of the forward region used after the step (issue #12 items 5
// and 3). The model returns (logits, loss) taken apart with a structured binding, a const and a
// static local live in the scope, and both the loss and the logits are read after the step; between
// the scaled backward and unscale_ a loop halves every parameter's .grad (what a 2-way gradient
// average does).

struct ClassifierImpl : torch::nn::Module {
  ClassifierImpl() { mlp = register_module("mlp", e2e::Mlp()); }
  std::tuple<torch::Tensor, torch::Tensor> forward(const torch::Tensor &x, const torch::Tensor &y) {
    auto logits = mlp->forward(x);
    return {logits, torch::nll_loss(logits, y)};
  }
  e2e::Mlp mlp{nullptr};
};
TORCH_MODULE(Classifier);

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  Classifier model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  train::GradScaler scaler(1024.0);
  model->train();
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto input = data.input(step);
    auto target = data.target(step);
    optimizer.zero_grad();
    at::autocast::set_cpu_enabled(true);
    static int forwards = 0;
    const auto [logits, loss] = model->forward(input, target);
    ++forwards;
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
    scaler.scale(loss).backward();
    for (auto &p : model->parameters())
      p.mutable_grad().div_(2.0);
    scaler.unscale_(optimizer);
    scaler.step(optimizer);
    scaler.update();
    auto correct = logits.argmax(1).eq(target).sum().item<int64_t>();
    std::printf("step %d forwards %d correct %lld\n", step, forwards,
                static_cast<long long>(correct));
    e2e::log_step(step, loss);
  }
  e2e::log_params(model->parameters());
}
