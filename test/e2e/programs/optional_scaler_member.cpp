#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <optional>

#include "common.h"
#include "loss_scaler.h"

// e2e before-program: a trainer class as public projects write it. The scaler is a std::optional
// member emplaced in the constructor with constructor arguments, an RAII guard opens the autocast
// scope behind a run-time flag (E2E_FP32=1 turns AMP off), every grad is clamped between unscale_
// and the clip, and the clip's total norm is logged.

/// Enables CPU autocast for its lifetime when `on`.
class AutocastGuard {
public:
  explicit AutocastGuard(bool on) : on_(on) {
    if (on_)
      at::autocast::set_cpu_enabled(true);
  }
  ~AutocastGuard() {
    if (on_) {
      at::autocast::set_cpu_enabled(false);
      at::autocast::clear_cache();
    }
  }

private:
  bool on_;
};

class Trainer {
public:
  explicit Trainer(bool use_amp)
      : use_amp_(use_amp),
        optimizer_(model_->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9)) {
    scaler_.emplace(1024.0, 2.0, 0.5, 4);
  }

  torch::Tensor train_step(const torch::Tensor &input, const torch::Tensor &target) {
    optimizer_.zero_grad();
    torch::Tensor loss;
    {
      AutocastGuard guard(use_amp_);
      loss = torch::nll_loss(model_->forward(input), target);
    }
    scaler_->scale(loss).backward();
    scaler_->unscale_(optimizer_);
    for (auto &p : model_->parameters())
      if (p.grad().defined())
        p.mutable_grad().clamp_(-0.5, 0.5);
    auto norm = torch::nn::utils::clip_grad_norm_(model_->parameters(), 1.0);
    scaler_->step(optimizer_);
    scaler_->update();
    last_norm_ = norm;
    return loss;
  }

  double last_norm() const { return last_norm_; }
  e2e::Mlp &model() { return model_; }

private:
  bool use_amp_;
  e2e::Mlp model_;
  torch::optim::SGD optimizer_;
  std::optional<train::GradScaler> scaler_;
  double last_norm_ = 0.0;
};

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  Trainer trainer(std::getenv("E2E_FP32") == nullptr);
  trainer.model()->train();
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto loss = trainer.train_step(data.input(step), data.target(step));
    e2e::log_step(step, loss);
    std::printf("step %d norm %.4f\n", step, trainer.last_norm());
  }
  e2e::log_params(trainer.model()->parameters());
}
