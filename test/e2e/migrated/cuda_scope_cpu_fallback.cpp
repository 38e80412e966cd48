#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cstdio>

#include "common.h"
#include "loss_scaler.h"
#include <amp/torch.h>

// e2e before-program: the common public shape of a CUDA training loop with a CPU fallback: the
// device chosen at run time, CUDA's autocast (`at::autocast::set_enabled`) around the forward and
// the loss, a loss scaler, a clip. On a machine without CUDA the scope casts nothing and the
// program trains in fp32; the migrated program must too (its conversion is CUDA's only).

int main() {
  torch::Device device = torch::cuda::is_available() ? torch::kCUDA : torch::kCPU;
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  model->to(device);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(65536.0));
  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1, torch::kCUDA);
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto x = data.input(step).to(device);
    auto y = data.target(step).to(device);
    torch::Tensor loss;
    auto grad_fn = amp::value_and_grad([&] {
      loss = torch::nll_loss(amp::cast_to_adapter_tensor(amp_model->forward(x)), y);
      return scaler.scale(loss);
    }, amp::parameters_of(optimizer));
    auto [scaled_loss, grads] = grad_fn();
    scaler.unscale_(optimizer, grads);
    amp::clip_by_global_norm_(grads, 1.0);
    scaler.step(optimizer, grads);
    scaler.update();
    e2e::log_step(step, loss);
  }
  e2e::log_params(model->parameters());
}
