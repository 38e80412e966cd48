#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cstdlib>
#include <optional>

#include "common.h"
#include "loss_scaler.h"

// e2e before-program: the shape real training loops have, a scaled AMP path beside the fp32 one
// under a run-time switch (here the environment: E2E_FP32=1 is the fp32 mode) with one
// zero_grad() for both. The first half of the steps chooses in one if/else on the flag; the second
// half splits the choice over several ifs on a std::optional scaler that is engaged only in AMP
// mode. The migrated program returns `COND ? scaler.scale(loss) : loss` from value_and_grad, steps
// each path on the grads and converts the model at `COND ? O1 : O0`, so that both modes compute
// what they computed before.

void train_block(e2e::Mlp &model, torch::optim::SGD &optimizer, train::GradScaler &scaler,
                 const e2e::SyntheticData &data, bool use_amp, int first, int last) {
  for (int step = first; step < last; ++step) {
    auto input = data.input(step);
    auto target = data.target(step);
    optimizer.zero_grad();
    if (use_amp)
      at::autocast::set_cpu_enabled(true);
    auto loss = torch::nll_loss(model->forward(input), target);
    if (use_amp) {
      at::autocast::set_cpu_enabled(false);
      at::autocast::clear_cache();
    }
    if (use_amp) {
      scaler.scale(loss).backward();
      scaler.unscale_(optimizer);
      torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
      scaler.step(optimizer);
      scaler.update();
    } else {
      loss.backward();
      torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
      optimizer.step();
    }
    e2e::log_step(step, loss);
  }
}

void train_split(e2e::Mlp &model, torch::optim::SGD &optimizer,
                 std::optional<train::GradScaler> &scaler, const e2e::SyntheticData &data,
                 int first, int last) {
  for (int step = first; step < last; ++step) {
    auto input = data.input(step);
    auto target = data.target(step);
    optimizer.zero_grad();
    if (scaler)
      at::autocast::set_cpu_enabled(true);
    auto loss = torch::nll_loss(model->forward(input), target);
    if (scaler) {
      at::autocast::set_cpu_enabled(false);
      at::autocast::clear_cache();
    }
    if (scaler)
      scaler->scale(loss).backward();
    else
      loss.backward();
    if (scaler)
      scaler->unscale_(optimizer);
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    if (scaler) {
      scaler->step(optimizer);
      scaler->update();
    } else {
      optimizer.step();
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
  train::GradScaler scaler(1024.0);
  std::optional<train::GradScaler> split_scaler;
  if (use_amp)
    split_scaler = train::GradScaler(1024.0);
  model->train();
  train_block(model, optimizer, scaler, data, use_amp, 0, e2e::kSteps / 2);
  train_split(model, optimizer, split_scaler, data, e2e::kSteps / 2, e2e::kSteps);
  e2e::log_params(model->parameters());
}
