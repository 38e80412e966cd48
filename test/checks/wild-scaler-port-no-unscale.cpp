// RUN: %check_amp %s %t.cpp
// WILD (issue #37, found by the differential check): a project's scaler class whose unscale_()
// assigns to a copy of each parameter and never touches a gradient. It trains with the grads still
// scaled; amp::GradScaler, which would replace it, unscales them: the step is reported as manual,
// naming the method, and left as it is.
#include <torch/torch.h>

namespace train {
class LossScaler {
public:
  torch::Tensor scale(const torch::Tensor &loss) const { return loss * scale_; }
  void unscale_(torch::optim::Optimizer &optimizer) {
    for (auto &p : optimizer.parameters())
      p = p * (1.0 / scale_); // a copy of the parameter: the grads stay scaled
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
  // CHECK-MESSAGES: :[[@LINE+2]]:3: note: the scope ends here{{.*}}
  auto loss = torch::mse_loss(model->forward(x), y);
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: the scaler class `LossScaler`'s step() never reads or writes a gradient (.grad(), mutable_grad()): it does not unscale the grads as amp::GradScaler, which would replace it, does; the rewrite would change what the step computes: migrate this step by hand [amp-manual-migration]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: step() without explicit grads{{.*}} [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}  train::LossScaler scaler;
// CHECK-FIXES: {{^}}  scaler.scale(loss).backward();
// CHECK-FIXES: {{^}}  scaler.step(optimizer);
