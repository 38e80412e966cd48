#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <memory>

#include "common.h"
#include "loss_scaler.h"
#include <amp/torch.h>

// e2e before-program: a training step split over two methods of a trainer class (issue #12
// item 6): the 1.x scope, forward, loss and scaled backward in forward_backward(); unscale_,
// clip_grad_norm_, step and update in optimizer_step(); both called from train_batch(), which
// calls zero_grad() first (the migrated member of grads must be cleared there, or the grads of
// every step would add up).

class Trainer {
public:
  Trainer()
      : optimizer_(std::make_unique<torch::optim::SGD>(
            model_->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9))) {
    model_->train();
  }

  torch::Tensor train_batch(const torch::Tensor &input, const torch::Tensor &target) {
    grads_.clear();
    auto loss = forward_backward(input, target);
    optimizer_step();
    return loss;
  }

  std::vector<torch::Tensor> parameters() const { return model_->parameters(); }

private:
  torch::Tensor forward_backward(const torch::Tensor &input, const torch::Tensor &target) {
    auto amp_model = amp::auto_mixed_precision(model_, amp::Level::O1);
    torch::Tensor loss;
    auto grad_fn = amp::value_and_grad([&] {
      auto output = amp::cast_to_adapter_tensor(amp_model->forward(input));
      loss = torch::nll_loss(output, target);
      return scaler_.scale(loss);
    }, amp::parameters_of(*optimizer_));
    auto [scaled_loss, micro_grads] = grad_fn();
    amp::accumulate_grads(grads_, micro_grads);
    return loss;
  }

  void optimizer_step() {
    scaler_.unscale_(*optimizer_, grads_);
    amp::clip_by_global_norm_(grads_, 0.2);
    scaler_.step(*optimizer_, grads_);
    scaler_.update();
  }

  e2e::Mlp model_;
  std::unique_ptr<torch::optim::SGD> optimizer_;
  amp::GradScaler scaler_{amp::GradScalerOptions().init_scale(1024.0)};
  std::vector<torch::Tensor> grads_; // the grads from forward_backward() to optimizer_step()
};

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  Trainer trainer;
  for (int step = 0; step < e2e::kSteps; ++step)
    e2e::log_step(step, trainer.train_batch(data.input(step), data.target(step)));
  e2e::log_params(trainer.parameters());
}
