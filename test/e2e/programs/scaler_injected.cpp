#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <memory>

#include "common.h"
#include "loss_scaler.h"

// e2e before-program: the scaler made in main with make_shared through a type alias and handed to
// a trainer's constructor, which keeps it in a member (`scaler_(std::move(scaler))`); the step is
// split into forward_backward() and optimizer_step(), a guard opens the scope, and the scale is
// read after training.

using Scaler = train::GradScaler;

struct AutocastGuard {
  explicit AutocastGuard(bool on) : prev_(at::autocast::is_cpu_enabled()) {
    at::autocast::set_cpu_enabled(on);
    at::autocast::increment_nesting();
  }
  ~AutocastGuard() {
    if (at::autocast::decrement_nesting() == 0)
      at::autocast::clear_cache();
    at::autocast::set_cpu_enabled(prev_);
  }
  bool prev_;
};

class Trainer {
public:
  Trainer(e2e::Mlp model, std::shared_ptr<Scaler> scaler, double lr)
      : model_(std::move(model)), scaler_(std::move(scaler)),
        opt_(std::make_unique<torch::optim::Adam>(model_->parameters(),
                                                  torch::optim::AdamOptions(lr))) {}

  torch::Tensor forward_backward(const torch::Tensor &x, const torch::Tensor &y) {
    torch::Tensor loss;
    {
      AutocastGuard guard(true);
      auto out = model_->forward(x);
      loss = torch::nll_loss(out, y);
    }
    scaler_->scale(loss).backward();
    return loss.detach();
  }

  void optimizer_step() {
    scaler_->unscale_(*opt_);
    torch::nn::utils::clip_grad_norm_(model_->parameters(), 1.0);
    scaler_->step(*opt_);
    scaler_->update();
    opt_->zero_grad();
  }

  torch::Tensor train_step(const torch::Tensor &x, const torch::Tensor &y) {
    auto loss = forward_backward(x, y);
    optimizer_step();
    return loss;
  }

private:
  e2e::Mlp model_;
  std::shared_ptr<Scaler> scaler_;
  std::unique_ptr<torch::optim::Adam> opt_;
};

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  auto scaler = std::make_shared<Scaler>(1024.0, 2.0, 0.5, 25);
  e2e::Mlp model;  // the trainer holds the same module
  Trainer trainer(model, scaler, 2e-3);
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto loss = trainer.train_step(data.input(step), data.target(step));
    e2e::log_step(step, loss);
  }
  std::printf("final scale %.1f\n", scaler->get_scale());
  e2e::log_params(model->parameters());
}
