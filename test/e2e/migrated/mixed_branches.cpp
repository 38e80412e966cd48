#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cstdlib>
#include <optional>

#include "common.h"
#include "loss_scaler.h"
#include <amp/torch.h>

// e2e before-program: the shape real training loops have, a scaled AMP path beside the fp32 one
// under a run-time switch (here the environment: E2E_FP32=1 is the fp32 mode) with one
// zero_grad() for both. The first half of the steps chooses in one if/else on the flag; the second
// half splits the choice over several ifs on a std::optional scaler that is engaged only in AMP
// mode. The migrated program returns `COND ? scaler.scale(loss) : loss` from value_and_grad, steps
// each path on the grads and converts the model at `COND ? O1 : O0`, so that both modes compute
// what they computed before.

void train_block(e2e::Mlp &model, torch::optim::SGD &optimizer, amp::GradScaler &scaler,
                 const e2e::SyntheticData &data, bool use_amp, int first, int last) {
  auto amp_model = amp::auto_mixed_precision(model, use_amp ? amp::Level::O1 : amp::Level::O0);
  for (int step = first; step < last; ++step) {
    auto input = data.input(step);
    auto target = data.target(step);
    torch::Tensor loss;
    auto grad_fn = amp::value_and_grad([&] {
      loss = torch::nll_loss(amp::cast_to_adapter_tensor(amp_model->forward(input)), target);
      return use_amp ? scaler.scale(loss) : loss;
    }, amp::parameters_of(optimizer));
    auto [loss_value, grads] = grad_fn();
    if (use_amp) {
      scaler.unscale_(optimizer, grads);
      amp::clip_by_global_norm_(grads, 1.0);
      scaler.step(optimizer, grads);
      scaler.update();
    } else {
      amp::clip_by_global_norm_(grads, 1.0);
      amp::step(optimizer, grads);
    }
    e2e::log_step(step, loss);
  }
}

void train_split(e2e::Mlp &model, torch::optim::SGD &optimizer,
                 std::optional<amp::GradScaler> &scaler, const e2e::SyntheticData &data,
                 int first, int last) {
  auto amp_model = amp::auto_mixed_precision(model, scaler ? amp::Level::O1 : amp::Level::O0);
  for (int step = first; step < last; ++step) {
    auto input = data.input(step);
    auto target = data.target(step);
    torch::Tensor loss;
    auto grad_fn = amp::value_and_grad([&] {
      loss = torch::nll_loss(amp::cast_to_adapter_tensor(amp_model->forward(input)), target);
      return scaler ? scaler->scale(loss) : loss;
    }, amp::parameters_of(optimizer));
    auto [loss_value, grads] = grad_fn();
    if (scaler)
      scaler->unscale_(optimizer, grads);
    amp::clip_by_global_norm_(grads, 1.0);
    if (scaler) {
      scaler->step(optimizer, grads);
      scaler->update();
    } else {
      amp::step(optimizer, grads);
    }
    e2e::log_step(step, loss);
  }
}

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  const bool use_amp = std::getenv("E2E_FP32") == nullptr;
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024.0));
  std::optional<amp::GradScaler> split_scaler;
  if (use_amp)
    split_scaler = amp::GradScaler(amp::GradScalerOptions().init_scale(1024.0));
  model->train();
  train_block(model, optimizer, scaler, data, use_amp, 0, e2e::kSteps / 2);
  train_split(model, optimizer, split_scaler, data, e2e::kSteps / 2, e2e::kSteps);
  e2e::log_params(model->parameters());
}
