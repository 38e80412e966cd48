#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"

// e2e before-program: a bf16 step with no loss scaler wholly inside a per-batch lambda (dtype,
// enable, forward, loss, disable, zero_grad, plain backward, the optimizer's step), called from
// the loop; the lambda returns the loss.

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  model->train();
  auto train_batch = [&](const torch::Tensor &input, const torch::Tensor &target) {
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_cpu_enabled(true);
    auto output = model->forward(input);
    auto loss = torch::nll_loss(output, target);
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    return loss;
  };
  for (int step = 0; step < e2e::kSteps; ++step)
    e2e::log_step(step, train_batch(data.input(step), data.target(step)));
  e2e::log_params(model->parameters());
}
