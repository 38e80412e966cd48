// What amp-migrate --level=O2 makes of ../train_mlp/train_mlp.cpp (the expected output; the demo
// uses it when the tool is not built). The original comment follows.
// A small libtorch training program in the *before* form amp-migrate rewrites: autocast switched
// on around forward and loss, a loss scaler class of the project's own (a port of Python's
// GradScaler), clip_grad_norm_ after unscale_, step and update. Runs on the CPU (autocast bf16).
#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cstdio>
#include <amp/torch.h>

namespace train {

/// The project's own port of torch.cuda.amp.GradScaler (libtorch has none).
class GradScaler {
public:
  explicit GradScaler(double init_scale = 65536.0, int growth_interval = 2000)
      : scale_(init_scale), growth_interval_(growth_interval) {}

  torch::Tensor scale(const torch::Tensor &loss) const { return loss * scale_; }

  void unscale_(torch::optim::Optimizer &optimizer) {
    torch::NoGradGuard no_grad;
    for (auto &group : optimizer.param_groups())
      for (auto &p : group.params()) {
        if (!p.grad().defined())
          continue;
        if (!torch::isfinite(p.grad()).all().item<bool>())
          found_inf_ = true;
        p.mutable_grad().mul_(1.0 / scale_);
      }
    unscaled_ = true;
  }

  void step(torch::optim::Optimizer &optimizer) {
    if (!unscaled_)
      unscale_(optimizer);
    if (!found_inf_)
      optimizer.step();
  }

  void update() {
    if (found_inf_) {
      scale_ *= 0.5;
      tracker_ = 0;
    } else if (++tracker_ == growth_interval_) {
      scale_ *= 2.0;
      tracker_ = 0;
    }
    found_inf_ = unscaled_ = false;
  }

private:
  double scale_;
  int growth_interval_, tracker_ = 0;
  bool found_inf_ = false, unscaled_ = false;
};

} // namespace train

struct NetImpl : torch::nn::Module {
  NetImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(64, 256));
    bn = register_module("bn", torch::nn::BatchNorm1d(256));
    fc2 = register_module("fc2", torch::nn::Linear(256, 256));
    fc3 = register_module("fc3", torch::nn::Linear(256, 10));
  }
  torch::Tensor forward(const torch::Tensor &x) {
    auto h = bn->forward(torch::relu(fc1->forward(x)));
    h = torch::relu(fc2->forward(h));
    return torch::log_softmax(fc3->forward(h), 1);
  }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
  torch::nn::BatchNorm1d bn{nullptr};
};
TORCH_MODULE(Net);

int main() {
  torch::manual_seed(7);
  auto inputs = torch::randn({1024, 64});
  auto targets = inputs.matmul(torch::randn({64, 10})).argmax(1);
  Net model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024.0).growth_interval(100));
  const double max_norm = 1.0;

  model->train();
  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2);
  for (int step = 0; step < 50; ++step) {
    auto data = inputs.narrow(0, (step * 64) % 1024, 64);
    auto target = targets.narrow(0, (step * 64) % 1024, 64);
    torch::Tensor loss;
    auto grad_fn = amp::value_and_grad([&] {
      auto output = amp::cast_to_adapter_tensor(amp_model->forward(data));
      loss = torch::nll_loss(output, target);
      return scaler.scale(loss);
    }, amp::parameters_of(optimizer));
    auto [scaled_loss, grads] = grad_fn();
    scaler.unscale_(optimizer, grads);
    amp::clip_by_global_norm_(grads, max_norm);
    scaler.step(optimizer, grads);
    scaler.update();
    std::printf("step %d loss %.5f\n", step, loss.item<double>());
  }
}
