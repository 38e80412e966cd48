#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <memory>

#include "common.h"
#include "loss_scaler.h"

// e2e before-program: the scaler crosses function boundaries. A trainer class holds it as a
// std::shared_ptr member made with make_shared and constructor arguments, and passes it by
// reference to a free step function that holds the autocast scope and the whole scaled step: a
// function template over the model whose scaler parameter has a type of its own.

template <class Model>
torch::Tensor train_step(Model &model, torch::optim::SGD &optimizer, train::GradScaler &scaler,
                         const torch::Tensor &input, const torch::Tensor &target) {
  optimizer.zero_grad();
  at::autocast::set_cpu_enabled(true);
  auto output = model->forward(input);
  auto loss = torch::nll_loss(output, target);
  at::autocast::set_cpu_enabled(false);
  at::autocast::clear_cache();
  scaler.scale(loss).backward();
  scaler.unscale_(optimizer);
  torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
  scaler.step(optimizer);
  scaler.update();
  return loss;
}

class Trainer {
public:
  Trainer()
      : optimizer_(model_->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9)),
        scaler_(std::make_shared<train::GradScaler>(1024.0)) {}

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
  std::shared_ptr<train::GradScaler> scaler_;
};

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  Trainer trainer;
  trainer.run(data);
}
