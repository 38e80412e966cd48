#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"
#include "loss_scaler.h"

// e2e before-program: one loss, two optimizers sharing one scaler, both unscaled first; the second
// optimizer's parameters are clipped between the two step() calls (the shape that was once
// half-migrated: the clip left on .grad, where it did nothing).

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::SGD first(model->fc1->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  std::vector<torch::Tensor> rest = model->fc2->parameters();
  for (const auto &p : model->fc3->parameters())
    rest.push_back(p);
  torch::optim::SGD others(rest, torch::optim::SGDOptions(0.5));
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
    scaler.unscale_(others);
    scaler.step(first);
    torch::nn::utils::clip_grad_norm_(others.parameters(), 0.05);
    scaler.step(others);
    scaler.update();
    e2e::log_step(step, loss);
  }
  e2e::log_params(model->parameters());
}
