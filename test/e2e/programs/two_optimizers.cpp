#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"
#include "loss_scaler.h"

// e2e before-program: one loss, two optimizers sharing one scaler (the first layer with SGD and
// momentum, the other layers with Adam), the first one's parameters clipped after its unscale_,
// one step each, one update.

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::SGD first(model->fc1->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  std::vector<torch::Tensor> rest = model->fc2->parameters();
  for (const auto &p : model->fc3->parameters())
    rest.push_back(p);
  torch::optim::Adam others(rest, torch::optim::AdamOptions(1e-3));
  train::GradScaler scaler(1024.0);
  model->train();
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto input = data.input(step);
    auto target = data.target(step);
    first.zero_grad();
    others.zero_grad();
    at::autocast::set_cpu_enabled(true);
    auto output = model->forward(input);
    auto loss = torch::nll_loss(output, target);
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
    scaler.scale(loss).backward();
    scaler.unscale_(first);
    torch::nn::utils::clip_grad_norm_(first.parameters(), 1.0);
    scaler.step(first);
    scaler.step(others);
    scaler.update();
    e2e::log_step(step, loss);
  }
  e2e::log_params(model->parameters());
}
