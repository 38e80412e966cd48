#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"
#include "loss_scaler.h"
#include <amp/torch.h>

// e2e before-program: the step is a member function of a class template over the model, and
// takes the scaler by reference (a type of its own, not the template's parameter); main owns the
// scaler and the optimizer and calls the step each iteration.

template <class Model>
class Stepper {
public:
  explicit Stepper(Model model) : model_(std::move(model)) {}

  torch::Tensor step(torch::optim::SGD &optimizer, amp::GradScaler &scaler,
                     const torch::Tensor &input, const torch::Tensor &target) {
    auto amp_model = amp::auto_mixed_precision(model_, amp::Level::O1);
    torch::Tensor loss;
    auto grad_fn = amp::value_and_grad([&] {
      auto output = amp::cast_to_adapter_tensor(amp_model->forward(input));
      loss = torch::nll_loss(output, target);
      return scaler.scale(loss);
    }, amp::parameters_of(optimizer));
    auto [scaled_loss, grads] = grad_fn();
    scaler.unscale_(optimizer, grads);
    amp::check_holds(optimizer, model_->parameters());
    amp::clip_by_global_norm_(grads, 1.0);
    scaler.step(optimizer, grads);
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
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024.0));
  Stepper<e2e::Mlp> stepper(model);
  model->train();
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto loss = stepper.step(optimizer, scaler, data.input(step), data.target(step));
    e2e::log_step(step, loss);
  }
  e2e::log_params(model->parameters());
}
