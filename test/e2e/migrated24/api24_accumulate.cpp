#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"
#include "loss_scaler.h"
#include <amp/torch.h>

// e2e before-program (libtorch >= 2.4 API): set_autocast_dtype / set_autocast_enabled with a
// device argument, gradient accumulation over two micro-batches, clip, step, update.

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024.0));
  const int micro_steps = 2;
  model->train();
  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1, at::kBFloat16);
  std::vector<torch::Tensor> grads;
  for (int step = 0; step < e2e::kSteps; ++step) {
    grads.clear();
    torch::Tensor total = torch::zeros({});
    for (int micro = 0; micro < micro_steps; ++micro) {
      auto input = data.input(2 * step + micro);
      auto target = data.target(2 * step + micro);
      torch::Tensor loss;
      auto grad_fn = amp::value_and_grad([&] {
        auto output = amp::cast_to_adapter_tensor(amp_model->forward(input));
        loss = torch::nll_loss(output, target) / micro_steps;
        return scaler.scale(loss);
      }, amp::parameters_of(optimizer));
      auto [scaled_loss, micro_grads] = grad_fn();
      amp::accumulate_grads(grads, micro_grads);
      total = total + loss.detach();
    }
    scaler.unscale_(optimizer, grads);
    amp::clip_by_global_norm_(grads, 1.0);
    scaler.step(optimizer, grads);
    scaler.update();
    e2e::log_step(step, total);
  }
  e2e::log_params(model->parameters());
}
