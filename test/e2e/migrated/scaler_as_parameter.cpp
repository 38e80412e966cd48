#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <memory>

#include "common.h"
#include "loss_scaler.h"
#include <amp/torch.h>

// e2e before-program: the scaler crosses function boundaries. A trainer class holds it as a
// std::shared_ptr member made with make_shared and constructor arguments, and passes it by
// reference to a free step function that holds the autocast scope and the whole scaled step: a
// function template over the model whose scaler parameter has a type of its own.

template <class Model>
torch::Tensor train_step(Model &model, torch::optim::SGD &optimizer, amp::GradScaler &scaler,
                         const torch::Tensor &input, const torch::Tensor &target) {
  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1);
  torch::Tensor loss;
  auto grad_fn = amp::value_and_grad([&] {
    auto output = amp::cast_to_adapter_tensor(amp_model->forward(input));
    loss = torch::nll_loss(output, target);
    return scaler.scale(loss);
  }, amp::parameters_of(optimizer));
  auto [scaled_loss, grads] = grad_fn();
  scaler.unscale_(optimizer, grads);
  amp::check_holds(optimizer, model->parameters());
  amp::clip_by_global_norm_(grads, 1.0);
  scaler.step(optimizer, grads);
  scaler.update();
  return loss;
}

class Trainer {
public:
  Trainer()
      : optimizer_(model_->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9)),
        scaler_(std::make_shared<amp::GradScaler>(amp::GradScalerOptions().init_scale(1024.0))) {}

  void run(const e2e::SyntheticData &data) {
    model_->train();
    for (int step = 0; step < e2e::kSteps; ++step) {
      auto loss = train_step(model_, optimizer_, *scaler_, data.input(step), data.target(step));
      e2e::log_step(step, loss);
    }
    e2e::log_params(model_->parameters());
  }

private:
  e2e::Mlp model_;
  torch::optim::SGD optimizer_;
  std::shared_ptr<amp::GradScaler> scaler_;
};

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  Trainer trainer;
  trainer.run(data);
}
