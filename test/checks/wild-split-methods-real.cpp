// REQUIRES: libtorch
// RUN: %check_amp_real %s %t.cpp -- -isystem %torch_include
// WILD, over real libtorch 1.13 headers (issue #12 item 6): a trainer whose step is split over
// two methods on a std::shared_ptr scaler member, the optimizer in a std::unique_ptr. Each half
// is reported naming both methods and the method calling them; nothing is edited.
#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <memory>

class LossScaler {
public:
  torch::Tensor scale(const torch::Tensor &loss) const { return loss * scale_; }
  void unscale_(torch::optim::Optimizer &opt) {
    for (auto &p : opt.param_groups()[0].params())
      if (p.grad().defined())
        p.mutable_grad().div_(scale_);
  }
  void step(torch::optim::Optimizer &opt) { opt.step(); }
  void update() {}

private:
  double scale_ = 1024.0;
};

class Trainer {
public:
  float train_batch(const torch::Tensor &x, const torch::Tensor &y) {
    float loss = forward_backward(x, y);
    optimizer_step();
    return loss;
  }

private:
  float forward_backward(const torch::Tensor &x, const torch::Tensor &y) {
    at::autocast::set_cpu_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_cpu_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss = torch::mse_loss(model_->forward(x), y);
    at::autocast::set_cpu_enabled(false);
    scaler_->scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: not migrated automatically: the step is split over two methods of 'Trainer': its unscale_()/step()/update() are in 'optimizer_step' (line [[#@LINE+9]]), both called from 'train_batch'; the grads of amp::value_and_grad would have to travel from 'forward_backward' to 'optimizer_step' as a member of the class, which is not rewritten automatically: move both halves into one method or migrate by hand [amp-manual-migration]
    // CHECK-MESSAGES: :[[@LINE-2]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    return loss.item<float>();
  }
  void optimizer_step() {
    scaler_->unscale_(*opt_);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
    torch::nn::utils::clip_grad_norm_(model_->parameters(), 1.0);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: grads = amp::clip_by_global_norm(grads, max_norm) [amp-clip-grad-norm]
    scaler_->step(*opt_);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: not migrated automatically: the step is split over two methods of 'Trainer': its scaled backward is in 'forward_backward' (line [[#@LINE-11]]), both called from 'train_batch'; the grads of amp::value_and_grad would have to travel from 'forward_backward' to 'optimizer_step' as a member of the class, which is not rewritten automatically: move both halves into one method or migrate by hand [amp-manual-migration]
    // CHECK-MESSAGES: :[[@LINE-2]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler_->update();
    opt_->zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
  }
  torch::nn::Linear model_{4, 2};
  std::unique_ptr<torch::optim::SGD> opt_;
  std::shared_ptr<LossScaler> scaler_ = std::make_shared<LossScaler>();
};
