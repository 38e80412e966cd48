#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "common.h"
#include "loss_scaler.h"

// e2e before-program: the training step is a member function of a class template (the model type
// a template parameter, instantiated twice: an MLP module and a torch::nn::Sequential), with the
// scaler a data member, the optimizer held by a std::shared_ptr, and autocast switched by a
// run-time flag member (off with E2E_FP32=1). Both instantiations train, one after the other.

template <class Net> class Trainer {
public:
  Trainer(Net net, double lr)
      : net_(std::move(net)),
        opt_(std::make_shared<torch::optim::SGD>(net_->parameters(),
                                                 torch::optim::SGDOptions(lr).momentum(0.9))),
        scaler_(1024.0) {}

  float train_step(const torch::Tensor &x, const torch::Tensor &y) {
    opt_->zero_grad();
    at::autocast::set_cpu_enabled(use_amp_);
    auto loss = torch::nll_loss(net_->forward(x), y);
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
    scaler_.scale(loss).backward();
    scaler_.unscale_(*opt_);
    torch::nn::utils::clip_grad_norm_(net_->parameters(), 1.0);
    scaler_.step(*opt_);
    scaler_.update();
    return loss.template item<float>();
  }

  std::vector<torch::Tensor> parameters() const { return net_->parameters(); }

private:
  Net net_;
  std::shared_ptr<torch::optim::SGD> opt_;
  train::GradScaler scaler_;
  bool use_amp_ = std::getenv("E2E_FP32") == nullptr;
};

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  Trainer<e2e::Mlp> trainer(e2e::Mlp(), 0.05);
  for (int step = 0; step < e2e::kSteps; ++step)
    std::printf("step %d loss %.6f\n", step,
                trainer.train_step(data.input(step), data.target(step)));
  torch::nn::Sequential seq(torch::nn::Linear(e2e::kInputs, 48), torch::nn::ReLU(),
                            torch::nn::Linear(48, e2e::kClasses), torch::nn::LogSoftmax(1));
  Trainer<torch::nn::Sequential> second(seq, 0.05);
  for (int step = 0; step < e2e::kSteps; ++step)
    std::printf("step %d loss %.6f\n", e2e::kSteps + step,
                second.train_step(data.input(step), data.target(step)));
  auto params = trainer.parameters();
  for (const auto &p : second.parameters())
    params.push_back(p);
  e2e::log_params(params);
}
