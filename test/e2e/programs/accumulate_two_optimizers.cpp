#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"
#include "loss_scaler.h"

// e2e before-program: gradient accumulation over two micro-batches, then two optimizers sharing
// one scaler (the first layer with SGD, the others with Adam), one update.

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
  const int micro_steps = 2;
  model->train();
  for (int step = 0; step < e2e::kSteps; ++step) {
    first.zero_grad();
    others.zero_grad();
    torch::Tensor total = torch::zeros({});
    for (int micro = 0; micro < micro_steps; ++micro) {
      at::autocast::set_cpu_enabled(true);
      auto output = model->forward(data.input(2 * step + micro));
      auto loss = torch::nll_loss(output, data.target(2 * step + micro)) / micro_steps;
      at::autocast::set_cpu_enabled(false);
      at::autocast::clear_cache();
      scaler.scale(loss).backward();
      total = total + loss.detach();
    }
    scaler.step(first);
    scaler.step(others);
    scaler.update();
    e2e::log_step(step, total);
  }
  e2e::log_params(model->parameters());
}
