#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"
#include <amp/torch.h>

// e2e before-program: a bf16 step with no loss scaler wholly inside a per-batch lambda (dtype,
// enable, forward, loss, disable, zero_grad, plain backward, the optimizer's step), called from
// the loop; the lambda returns the loss.

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  model->train();
  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1, at::kBFloat16);
  auto train_batch = [&, amp_model](const torch::Tensor &input, const torch::Tensor &target) {
    torch::Tensor loss;
    auto grad_fn = amp::value_and_grad([&] {
      auto output = amp::cast_to_adapter_tensor(amp_model->forward(input));
      loss = torch::nll_loss(output, target);
      return loss;
    }, amp::parameters_of(optimizer));
    auto [loss_value, grads] = grad_fn();
    amp::step(optimizer, grads);
    return loss;
  };
  for (int step = 0; step < e2e::kSteps; ++step)
    e2e::log_step(step, train_batch(data.input(step), data.target(step)));
  e2e::log_params(model->parameters());
}
