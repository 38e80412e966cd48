#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"
#include "loss_scaler.h"

// e2e before-program: the step is a member function of a class template over the model, and
// takes the scaler by reference (a type of its own, not the template's parameter); main owns the
// scaler and the optimizer and calls the step each iteration.

template <class Model>
class Stepper {
public:
  explicit Stepper(Model model) : model_(std::move(model)) {}

  torch::Tensor step(torch::optim::SGD &optimizer, train::GradScaler &scaler,
                     const torch::Tensor &input, const torch::Tensor &target) {
    optimizer.zero_grad();
    at::autocast::set_cpu_enabled(true);
    auto output = model_->forward(input);
    auto loss = torch::nll_loss(output, target);
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
    scaler.scale(loss).backward();
    scaler.unscale_(optimizer);
    torch::nn::utils::clip_grad_norm_(model_->parameters(), 1.0);
    scaler.step(optimizer);
    scaler.update();
    return loss;
  }

private:
  Model model_;
};

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  train::GradScaler scaler(1024.0);
  Stepper<e2e::Mlp> stepper(model);
  model->train();
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto loss = stepper.step(optimizer, scaler, data.input(step), data.target(step));
    e2e::log_step(step, loss);
  }
  e2e::log_params(model->parameters());
}
