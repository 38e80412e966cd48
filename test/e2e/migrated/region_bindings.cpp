#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cstdio>
#include <tuple>

#include "common.h"
#include "loss_scaler.h"
#include <amp/torch.h>

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
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024.0));
  model->train();
  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1);
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto input = data.input(step);
    auto target = data.target(step);
    static int forwards = 0;
    torch::Tensor logits;
    torch::Tensor loss;
    auto grad_fn = amp::value_and_grad([&] {
      std::tie(logits, loss) = amp::cast_to_adapter_tensor(amp_model->forward(input, target));
      ++forwards;
      return scaler.scale(loss);
    }, amp::parameters_of(optimizer));
    auto [scaled_loss, grads] = grad_fn();
    for (auto &p_grad : grads)
      p_grad.div_(2.0);
    scaler.unscale_(optimizer, grads);
    scaler.step(optimizer, grads);
    scaler.update();
    auto correct = logits.argmax(1).eq(target).sum().item<int64_t>();
    std::printf("step %d forwards %d correct %lld\n", step, forwards,
                static_cast<long long>(correct));
    e2e::log_step(step, loss);
  }
  e2e::log_params(model->parameters());
}
