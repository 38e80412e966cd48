#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cstdio>

#include "common.h"
#include "loss_scaler.h"

// e2e before-program: the losses come back as a struct and the scaled backward runs on one of its
// fields (`losses.total`), as trainers with several logged loss terms write it (issues #37, #38).

struct Losses {
  torch::Tensor nll;
  torch::Tensor l2;
  torch::Tensor total;
};

Losses compute_losses(const torch::Tensor &output, const torch::Tensor &target) {
  Losses l;
  l.nll = torch::nll_loss(output, target);
  l.l2 = output.exp().pow(2).mean() * 0.01;
  l.total = l.nll + l.l2;
  return l;
}

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  train::GradScaler scaler(256.0, 2.0, 0.5, 20);
  model->train();
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto input = data.input(step);
    auto target = data.target(step);
    optimizer.zero_grad();
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_cpu_enabled(true);
    auto output = model->forward(input);
    auto losses = compute_losses(output, target);
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
    scaler.scale(losses.total).backward();
    scaler.step(optimizer);
    scaler.update();
    std::printf("step %d nll %.6f\n", step, losses.nll.item<double>());
    e2e::log_step(step, losses.total);
  }
  e2e::log_params(model->parameters());
}
