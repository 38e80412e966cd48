#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"
#include <amp/torch.h>

// e2e before-program: bf16 CPU autocast with no loss scaler (bf16 keeps fp32's exponent range), as
// modern code trains: an enable/disable pair around forward and loss, a plain loss.backward(),
// clip_grad_norm_ on the grads, then the optimizer's own step().

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(1e-2));
  model->train();
  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1, at::kBFloat16);
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto input = data.input(step);
    auto target = data.target(step);
    torch::Tensor loss;
    auto grad_fn = amp::value_and_grad([&] {
      auto output = amp::cast_to_adapter_tensor(amp_model->forward(input));
      loss = torch::nll_loss(output, target);
      return loss;
    }, amp::parameters_of(optimizer));
    auto [loss_value, grads] = grad_fn();
    amp::clip_by_global_norm_(grads, 0.5);
    amp::step(optimizer, grads);
    e2e::log_step(step, loss);
  }
  e2e::log_params(model->parameters());
}
