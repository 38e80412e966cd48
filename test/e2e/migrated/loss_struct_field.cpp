#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cstdio>

#include "common.h"
#include "loss_scaler.h"
#include <amp/torch.h>

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
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(256.0).growth_factor(2.0).backoff_factor(0.5).growth_interval(20));
  model->train();
  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1, at::kBFloat16);
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto input = data.input(step);
    auto target = data.target(step);
    Losses losses;
    auto grad_fn = amp::value_and_grad([&] {
      auto output = amp::cast_to_adapter_tensor(amp_model->forward(input));
      losses = compute_losses(output, target);
      return scaler.scale(losses.total);
    }, amp::parameters_of(optimizer));
    auto [scaled_loss, grads] = grad_fn();
    scaler.step(optimizer, grads);
    scaler.update();
    std::printf("step %d nll %.6f\n", step, losses.nll.item<double>());
    e2e::log_step(step, losses.total);
  }
  e2e::log_params(model->parameters());
}
