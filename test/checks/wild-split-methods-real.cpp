// REQUIRES: libtorch
// RUN: %check_amp_real %s %t.cpp -- -isystem %torch_include -I %amp_torch_include -I %amp_runtime_include
// WILD, over real libtorch 1.13 headers (issue #12 item 6): a trainer whose step is split over
// two methods on a std::shared_ptr scaler member, the optimizer in a std::unique_ptr: one fix,
// the grads in a new member after the scaler's, verified against the real binding.
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
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    return loss.item<float>();
  }
  void optimizer_step() {
    scaler_->unscale_(*opt_);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
    torch::nn::utils::clip_grad_norm_(model_->parameters(), 1.0);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
    scaler_->step(*opt_);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler_->update();
    opt_->zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() ends a gradient accumulation: with explicit gradients it clears the summed grads list instead (grads.clear()) [amp-zero-grad]
  }
  torch::nn::Linear model_{4, 2};
  std::unique_ptr<torch::optim::SGD> opt_;
  std::shared_ptr<LossScaler> scaler_ = std::make_shared<LossScaler>();
};

// CHECK-FIXES: {{^}}#include <amp/torch.h>{{$}}
// CHECK-FIXES: {{^}}    auto amp_model = amp::auto_mixed_precision(model_, amp::Level::O2);{{$}}
// CHECK-FIXES-NEXT: {{^}}    torch::Tensor loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}      loss = torch::mse_loss(amp::cast_to_adapter_tensor(amp_model->forward(x)), y);{{$}}
// CHECK-FIXES-NEXT: {{^}}      return scaler_->scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}    }, amp::parameters_of(*opt_));{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto [scaled_loss, micro_grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}    amp::accumulate_grads(grads_, micro_grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}    return loss.item<float>();{{$}}
// CHECK-FIXES-NEXT: {{^}}  }{{$}}
// CHECK-FIXES-NEXT: {{^}}  void optimizer_step() {{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler_->unscale_(*opt_, grads_);{{$}}
// CHECK-FIXES-NEXT: {{^}}    amp::check_holds(*opt_, model_->parameters());{{$}}
// CHECK-FIXES-NEXT: {{^}}    amp::clip_by_global_norm_(grads_, 1.0);{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler_->step(*opt_, grads_);{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler_->update();{{$}}
// CHECK-FIXES-NEXT: {{^}}    grads_.clear();{{$}}
// CHECK-FIXES-NEXT: {{^}}  }{{$}}
// CHECK-FIXES: {{^}}  std::shared_ptr<amp::GradScaler> scaler_ = std::make_shared<amp::GradScaler>();{{$}}
// CHECK-FIXES-NEXT: {{^}}  std::vector<torch::Tensor> grads_; // the grads from forward_backward() to optimizer_step(){{$}}
// CHECK-FIXES-NEXT: {{^}}};{{$}}
