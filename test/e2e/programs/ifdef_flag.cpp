#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"

// e2e before-program: AMP chosen at compile time. `#ifdef USE_AMP` around the autocast calls only
// (dtype and enable before the forward, disable and clear_cache after the loss); bf16 on the CPU
// with no scaler, a plain backward and the optimizer's step. Built with USE_AMP defined (below),
// as the tool parses it.

#ifndef USE_AMP
#define USE_AMP 1
#endif

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  model->train();
  for (int step = 0; step < e2e::kSteps; ++step) {
    optimizer.zero_grad();
#ifdef USE_AMP
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_cpu_enabled(true);
#endif
    auto output = model->forward(data.input(step));
    auto loss = torch::nll_loss(output, data.target(step));
#ifdef USE_AMP
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
#endif
    loss.backward();
    optimizer.step();
    e2e::log_step(step, loss);
  }
  e2e::log_params(model->parameters());
}
