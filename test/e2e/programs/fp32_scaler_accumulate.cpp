#include <torch/torch.h>

#include <cstdio>

#include "common.h"
#include "loss_scaler.h"

// e2e before-program: a loss scaler with no autocast scope (issue #38 "Shape 2", the shape of a GPT
// trainer): the forward runs in fp32, each micro-batch's scaled `(loss / k)` is backpropagated,
// then unscale_, clip_grad_norm_, step and update once per step. The migrated program keeps the
// fp32 forward (O0: no model converted) and takes the grads explicitly.

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::AdamW optimizer(model->parameters(),
                                torch::optim::AdamWOptions(1e-2).weight_decay(0.01));
  train::GradScaler scaler(1024.0, 2.0, 0.5, 10);
  const int grad_accum = 4;
  model->train();
  for (int step = 0; step < e2e::kSteps; ++step) {
    double step_loss = 0;
    for (int micro = 0; micro < grad_accum; ++micro) {
      int batch = step * grad_accum + micro;
      auto input = data.input(batch);
      auto logits = model->forward(input);
      auto loss = torch::nll_loss(logits, data.target(batch));
      step_loss += loss.item<double>();
      scaler.scale(loss / grad_accum).backward();
    }
    scaler.unscale_(optimizer);
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    scaler.step(optimizer);
    scaler.update();
    optimizer.zero_grad();
    e2e::log_step(step, torch::tensor(step_loss / grad_accum));
    e2e::log_scale(step, scaler.get_scale());
  }
  e2e::log_params(model->parameters());
}
