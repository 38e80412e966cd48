#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <optional>

#include "common.h"
#include "loss_scaler.h"
#include <amp/torch.h>

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
    scaler_.emplace(amp::GradScalerOptions().init_scale(1024.0).growth_factor(2.0).backoff_factor(0.5).growth_interval(4));
  }

  torch::Tensor train_step(const torch::Tensor &input, const torch::Tensor &target) {
    torch::Tensor loss;
    auto amp_model = amp::auto_mixed_precision(model_, use_amp_ ? amp::Level::O1 : amp::Level::O0);
    auto grad_fn = amp::value_and_grad([&] {
      loss = torch::nll_loss(amp::cast_to_adapter_tensor(amp_model->forward(input)), target);
      return scaler_->scale(loss);
    }, amp::parameters_of(optimizer_));
    auto [scaled_loss, grads] = grad_fn();
    scaler_->unscale_(optimizer_, grads);
    for (auto &p_grad : grads)
      if (p_grad.defined())
        p_grad.clamp_(-0.5, 0.5);
    auto norm = amp::clip_by_global_norm_(grads, 1.0).item<double>();
    scaler_->step(optimizer_, grads);
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
  std::optional<amp::GradScaler> scaler_;
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
