#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"
#include "loss_scaler.h"

// e2e before-program: the scope calls the model's submodules one by one
// (`model->fc1->forward(x)` ... `model->fc3->forward(h)`, the model's own forward never called),
// a hand-written scaler, step and update. Each submodule is converted, as the model would be.

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(3e-3));
  train::GradScaler scaler(1024.0);
  model->train();
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto input = data.input(step);
    auto target = data.target(step);
    optimizer.zero_grad();
    at::autocast::set_cpu_enabled(true);
    auto h = torch::relu(model->fc1->forward(input));
    h = torch::relu(model->fc2->forward(h));
    auto output = torch::log_softmax(model->fc3->forward(h), 1);
    auto loss = torch::nll_loss(output, target);
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
    scaler.scale(loss).backward();
    scaler.step(optimizer);
    scaler.update();
    e2e::log_step(step, loss);
  }
  e2e::log_params(model->parameters());
}
