#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"

// e2e before-program: bf16 CPU autocast with no loss scaler and gradient accumulation as modern
// code writes it: the loss divided in the backward call, `(loss / kAccum).backward()`, and the
// optimizer stepping every kAccum micro-batches (`(step + 1) % kAccum == 0`), zero_grad() after.

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  const int kAccum = 3;
  model->train();
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto input = data.input(step);
    auto target = data.target(step);
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_cpu_enabled(true);
    auto loss = torch::nll_loss(model->forward(input), target);
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
    (loss / kAccum).backward();
    if ((step + 1) % kAccum == 0) {
      optimizer.step();
      optimizer.zero_grad();
    }
    e2e::log_step(step, loss);
  }
  e2e::log_params(model->parameters());
}
