#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"
#include <amp/torch.h>

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
#ifdef USE_AMP
  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1, at::kBFloat16);
#else
  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O0, at::kBFloat16);
#endif
  for (int step = 0; step < e2e::kSteps; ++step) {
    torch::Tensor loss;
    auto grad_fn = amp::value_and_grad([&] {
      auto output = amp::cast_to_adapter_tensor(amp_model->forward(data.input(step)));
      loss = torch::nll_loss(output, data.target(step));
      return loss;
    }, amp::parameters_of(optimizer));
    auto [loss_value, grads] = grad_fn();
    amp::step(optimizer, grads);
    e2e::log_step(step, loss);
  }
  e2e::log_params(model->parameters());
}
