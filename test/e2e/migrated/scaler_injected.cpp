#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <memory>

#include "common.h"
#include "loss_scaler.h"
#include <amp/torch.h>

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
  Trainer(e2e::Mlp model, std::shared_ptr<amp::GradScaler> scaler, double lr)
      : model_(std::move(model)), scaler_(std::move(scaler)),
        opt_(std::make_unique<torch::optim::Adam>(model_->parameters(),
                                                  torch::optim::AdamOptions(lr))) {}

  torch::Tensor forward_backward(const torch::Tensor &x, const torch::Tensor &y) {
    torch::Tensor loss;
    auto amp_model = amp::auto_mixed_precision(model_, amp::Level::O1);
    auto grad_fn = amp::value_and_grad([&] {
      auto out = amp::cast_to_adapter_tensor(amp_model->forward(x));
      loss = torch::nll_loss(out, y);
      return scaler_->scale(loss);
    }, amp::parameters_of(*opt_));
    auto [scaled_loss, micro_grads] = grad_fn();
    amp::accumulate_grads(grads_, micro_grads);
    return loss.detach();
  }

  void optimizer_step() {
    scaler_->unscale_(*opt_, grads_);
    amp::clip_by_global_norm_(grads_, 1.0);
    scaler_->step(*opt_, grads_);
    scaler_->update();
    grads_.clear();
  }

  torch::Tensor train_step(const torch::Tensor &x, const torch::Tensor &y) {
    auto loss = forward_backward(x, y);
    optimizer_step();
    return loss;
  }

private:
  e2e::Mlp model_;
  std::shared_ptr<amp::GradScaler> scaler_;
  std::vector<torch::Tensor> grads_; // the grads from forward_backward() to optimizer_step()
  std::unique_ptr<torch::optim::Adam> opt_;
};

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  auto scaler = std::make_shared<amp::GradScaler>(amp::GradScalerOptions().init_scale(1024.0).growth_factor(2.0).backoff_factor(0.5).growth_interval(25));
  e2e::Mlp model;  // the trainer holds the same module
  Trainer trainer(model, scaler, 2e-3);
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto loss = trainer.train_step(data.input(step), data.target(step));
    e2e::log_step(step, loss);
  }
  std::printf("final scale %.1f\n", scaler->get_scale());
  e2e::log_params(model->parameters());
}
