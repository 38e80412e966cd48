#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"
#include "gloo_group.h"
#include "loss_scaler.h"

// e2e before-program: data-parallel training over a Gloo process group (one process per rank,
// each on its own batches); after the scaled backward a loop all-reduces every p.grad() and
// averages it, then unscale_, step and update with a hand-written scaler.

int main() {
  auto pg = e2e::gloo_group_from_env("train");
  const int rank = pg->getRank();
  const int world = pg->getSize();
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  train::GradScaler scaler(1024.0);
  model->train();
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto input = data.input(step * world + rank);
    auto target = data.target(step * world + rank);
    optimizer.zero_grad();
    at::autocast::set_cpu_enabled(true);
    auto output = model->forward(input);
    auto loss = torch::nll_loss(output, target);
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
    scaler.scale(loss).backward();
    for (auto &p : model->parameters()) {
      std::vector<torch::Tensor> bufs{p.grad()};
      pg->allreduce(bufs)->wait();
      p.grad().div_(world);
    }
    scaler.unscale_(optimizer);
    scaler.step(optimizer);
    scaler.update();
    e2e::log_step(step, loss);
    e2e::log_param_digest(step, model->parameters());
  }
  e2e::log_params(model->parameters());
}
