#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"
#include "gloo_group.h"
#include "loss_scaler.h"
#include <amp/torch.h>

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
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024.0));
  model->train();
  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1);
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto input = data.input(step * world + rank);
    auto target = data.target(step * world + rank);
    torch::Tensor loss;
    auto grad_fn = amp::value_and_grad([&] {
      auto output = amp::cast_to_adapter_tensor(amp_model->forward(input));
      loss = torch::nll_loss(output, target);
      return scaler.scale(loss);
    }, amp::parameters_of(optimizer));
    auto [scaled_loss, grads] = grad_fn();
    amp::all_reduce_grads(grads, pg);
    scaler.unscale_(optimizer, grads);
    scaler.step(optimizer, grads);
    scaler.update();
    e2e::log_step(step, loss);
    e2e::log_param_digest(step, model->parameters());
  }
  e2e::log_params(model->parameters());
}
