#include <torch/torch.h>

#include <cstdio>

#include "common.h"
#include "crossfile_model.h"
#include "options_scaler.h"

// e2e before-program in two translation units (issue #38 item 2, the shape of a GPT trainer): the
// model's forward is defined in fp32_scaler_crossfile.model.cpp and returns the logits and the
// loss; a loss scaler built from an options object and no autocast scope; each micro-batch's
// scaled `loss / k` is backpropagated, the loss kept for the log after it; unscale_ and the clip
// under a condition, then step and update. The tool migrates this file only with the model's file
// in the run (its summary says the forward turns no autocast on): O0, the fp32 forward kept.

int main(int argc, char **) {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  crossfile::TinyNet model;
  torch::optim::AdamW optimizer(model->parameters(),
                                torch::optim::AdamWOptions(1e-2).weight_decay(0.01));
  train::OptionsGradScaler scaler(train::ScalerOptions{}.init_scale(1024.0).growth_interval(10));
  const int grad_accum = 4;
  const double grad_clip = argc > 5 ? 0.0 : 1.0; // a run-time setting, as a config's is
  model->train();
  for (int step = 0; step < e2e::kSteps; ++step) {
    torch::Tensor step_loss;
    for (int micro = 0; micro < grad_accum; ++micro) {
      int batch = step * grad_accum + micro;
      auto [logits, loss] = model->forward(data.input(batch), data.target(batch));
      loss = loss / grad_accum;
      scaler.scale(loss).backward();
      step_loss = std::move(loss);
    }
    if (grad_clip != 0.0) {
      scaler.unscale_(optimizer);
      torch::nn::utils::clip_grad_norm_(model->parameters(), grad_clip);
    }
    scaler.step(optimizer);
    scaler.update();
    optimizer.zero_grad();
    e2e::log_step(step, step_loss * grad_accum);
    e2e::log_scale(step, scaler.get_scale());
  }
  e2e::log_params(model->parameters());
}
