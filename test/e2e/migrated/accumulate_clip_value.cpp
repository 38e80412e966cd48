#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cstdio>

#include "common.h"
#include "loss_scaler.h"
#include <amp/torch.h>

// e2e before-program: gradient accumulation over 4 micro-batches (the loss divided by 4, one
// optimizer step every 4th batch) with clip_grad_value_ between unscale_ and step(), and the loss
// scale logged after each update.

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-2));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024.0));
  const int accum = 4;
  model->train();
  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1);
  std::vector<torch::Tensor> grads;
  for (int i = 0; i < 4 * e2e::kSteps; ++i) {
    torch::Tensor loss;
    auto grad_fn = amp::value_and_grad([&] {
      loss = torch::nll_loss(amp::cast_to_adapter_tensor(amp_model->forward(data.input(i))), data.target(i)) / accum;
      return scaler.scale(loss);
    }, amp::parameters_of(optimizer));
    auto [scaled_loss, micro_grads] = grad_fn();
    amp::accumulate_grads(grads, micro_grads);
    if ((i + 1) % accum == 0) {
      scaler.unscale_(optimizer, grads);
      amp::clip_by_value_(grads, 0.02);
      scaler.step(optimizer, grads);
      scaler.update();
      grads.clear();
      e2e::log_step(i / accum, loss * accum);
      std::printf("step %d scale %.1f\n", i / accum, scaler.get_scale());
    }
  }
  e2e::log_params(model->parameters());
}
