// RUN: %check_amp %s %t.cpp
// WILD: the project's own scaler class defined in the file being migrated. Its methods are the
// implementation (step() calling its own unscale_(), scale() multiplying), not training code:
// no finding there, as for a guard class's body. Its use in the training step is migrated.
#include <torch/torch.h>

namespace train {
class LossScaler {
public:
  torch::Tensor scale(const torch::Tensor &loss) const { return loss * scale_; }
  void unscale_(torch::optim::Optimizer &optimizer) {
    for (auto &p : optimizer.parameters())
      p.mutable_grad().mul_(1.0 / scale_);
  }
  void step(torch::optim::Optimizer &optimizer) {
    unscale_(optimizer);
    optimizer.step();
  }
  void update() {}

private:
  double scale_ = 1024.0;
};
} // namespace train

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void train_step(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &x, const torch::Tensor &y) {
  train::LossScaler scaler;
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled{{.*}} [amp-autocast-scope]
  auto loss = torch::mse_loss(model->forward(x), y);
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads{{.*}} [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}  void step(torch::optim::Optimizer &optimizer) {
// CHECK-FIXES-NEXT: {{^}}    unscale_(optimizer);
// CHECK-FIXES: {{^}}  amp::GradScaler scaler;
// CHECK-FIXES: {{^}}  scaler.step(optimizer, grads);
