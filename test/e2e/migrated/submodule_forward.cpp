#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"
#include "loss_scaler.h"
#include <amp/torch.h>

// e2e before-program: the scope calls the model's submodules one by one
// (`model->fc1->forward(x)` ... `model->fc3->forward(h)`, the model's own forward never called),
// a hand-written scaler, step and update. Each submodule is converted, as the model would be.

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(3e-3));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024.0));
  model->train();
  auto amp_fc1 = amp::auto_mixed_precision(model->fc1, amp::Level::O1);
  auto amp_fc2 = amp::auto_mixed_precision(model->fc2, amp::Level::O1);
  auto amp_fc3 = amp::auto_mixed_precision(model->fc3, amp::Level::O1);
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto input = data.input(step);
    auto target = data.target(step);
    torch::Tensor loss;
    auto grad_fn = amp::value_and_grad([&] {
      auto h = torch::relu(amp::cast_to_adapter_tensor(amp_fc1->forward(input)));
      h = torch::relu(amp::cast_to_adapter_tensor(amp_fc2->forward(h)));
      auto output = torch::log_softmax(amp::cast_to_adapter_tensor(amp_fc3->forward(h)), 1);
      loss = torch::nll_loss(output, target);
      return scaler.scale(loss);
    }, amp::parameters_of(optimizer));
    auto [scaled_loss, grads] = grad_fn();
    scaler.step(optimizer, grads);
    scaler.update();
    e2e::log_step(step, loss);
  }
  e2e::log_params(model->parameters());
}
