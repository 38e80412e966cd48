// REQUIRES: libtorch
// RUN: %check_amp_real %s %t.cpp --level=O1 -- -isystem %torch_include -I %amp_torch_include -I %amp_runtime_include
// WILD: the training loop real projects have, over real libtorch 1.13 headers: AMP gated on a
// run-time flag (`if (use_amp)` around the CPU autocast pair and clear_cache()), one zero_grad(),
// then `if (use_amp) { scaled backward, unscale_, clip, step, update } else { backward, clip,
// step }`, and a second trainer whose scaler is a std::shared_ptr (null in fp32 mode) with the
// choice split over ifs. Both paths keep working: the fix is verified against the real binding.
#include <ATen/autocast_mode.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/sgd.h>
#include <memory>

namespace train {
// The common C++ port of Python's GradScaler (implicit gradients).
class GradScaler {
public:
  explicit GradScaler(double init_scale = 65536.0) : scale_(init_scale) {}
  torch::Tensor scale(const torch::Tensor &loss) const { return loss * scale_; }
  void unscale_(torch::optim::Optimizer &optimizer);
  void step(torch::optim::Optimizer &optimizer);
  void update();

private:
  double scale_;
};
} // namespace train

void run_training(torch::nn::Linear &model, torch::optim::SGD &optimizer, train::GradScaler &scaler,
                  const torch::Tensor &x, const torch::Tensor &y, bool use_amp) {
  for (int i = 0; i < 10; ++i) {
    optimizer.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
    if (use_amp)
      at::autocast::set_cpu_enabled(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: autocast scope enabled with 'at::autocast::set_cpu_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
      // CHECK-MESSAGES: :[[@LINE+4]]:7: note: the scope ends here
      // CHECK-MESSAGES: :[[@LINE+17]]:7: note: the plain path (no scaler) backpropagates the loss computed in this scope here; it takes the grads of amp::value_and_grad too, and its step becomes amp::step(optimizer, grads)
    auto loss = torch::nn::functional::cross_entropy(model->forward(x), y);
    if (use_amp) {
      at::autocast::set_cpu_enabled(false);
      at::autocast::clear_cache();
    }
    if (use_amp) {
      scaler.scale(loss).backward();
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
      scaler.unscale_(optimizer);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
      torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
      scaler.step(optimizer);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
      scaler.update();
    } else {
      loss.backward();
      torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: clipping the parameters' .grad on the plain path (no scaler) of a mixed step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
      optimizer.step();
    }
  }
}

void shared_scaler(torch::nn::Linear &model, std::shared_ptr<torch::optim::SGD> opt,
                   std::shared_ptr<train::GradScaler> scaler, const torch::Tensor &x,
                   const torch::Tensor &y) {
  opt->zero_grad();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
  torch::Tensor loss;
  {
    if (scaler)
      at::autocast::set_cpu_enabled(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: autocast scope enabled with 'at::autocast::set_cpu_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
      // CHECK-MESSAGES: :[[@LINE+4]]:7: note: the scope ends here
      // CHECK-MESSAGES: :[[@LINE+9]]:5: note: the plain path (no scaler) backpropagates the loss computed in this scope here; it takes the grads of amp::value_and_grad too, and its step becomes amp::step(optimizer, grads)
    loss = torch::nn::functional::mse_loss(model(x), y);
    if (scaler)
      at::autocast::set_cpu_enabled(false);
  }
  if (scaler)
    scaler->scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  else
    loss.backward();
  if (scaler) {
    scaler->step(*opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler->update();
  } else {
    opt->step();
  }
}

// CHECK-FIXES: {{^}}#include <amp/torch.h>{{$}}
// CHECK-FIXES: {{^}}void run_training(torch::nn::Linear &model, torch::optim::SGD &optimizer, amp::GradScaler &scaler,{{$}}
// CHECK-FIXES-NEXT: {{^}}                  const torch::Tensor &x, const torch::Tensor &y, bool use_amp) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, use_amp ? amp::Level::O1 : amp::Level::O0);{{$}}
// CHECK-FIXES-NEXT: {{^}}  for (int i = 0; i < 10; ++i) {{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}      auto loss = torch::nn::functional::cross_entropy(amp::cast_to_adapter_tensor(amp_model->forward(x)), y);{{$}}
// CHECK-FIXES-NEXT: {{^}}      return use_amp ? scaler.scale(loss) : loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}    }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto [loss_value, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}    if (use_amp) {{{$}}
// CHECK-FIXES-NEXT: {{^}}      scaler.unscale_(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}      amp::check_holds(optimizer, model->parameters());{{$}}
// CHECK-FIXES-NEXT: {{^}}      amp::clip_by_global_norm_(grads, 1.0);{{$}}
// CHECK-FIXES-NEXT: {{^}}      scaler.step(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}      scaler.update();{{$}}
// CHECK-FIXES-NEXT: {{^}}    } else {{{$}}
// CHECK-FIXES-NEXT: {{^}}      amp::check_holds(optimizer, model->parameters());{{$}}
// CHECK-FIXES-NEXT: {{^}}      amp::clip_by_global_norm_(grads, 1.0);{{$}}
// CHECK-FIXES-NEXT: {{^}}      amp::step(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}    }{{$}}
// CHECK-FIXES-NEXT: {{^}}  }{{$}}
// CHECK-FIXES-NEXT: {{^}}}{{$}}
// CHECK-FIXES: {{^}}void shared_scaler(torch::nn::Linear &model, std::shared_ptr<torch::optim::SGD> opt,{{$}}
// CHECK-FIXES-NEXT: {{^}}                   std::shared_ptr<amp::GradScaler> scaler, const torch::Tensor &x,{{$}}
// CHECK-FIXES-NEXT: {{^}}                   const torch::Tensor &y) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  torch::Tensor loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, scaler ? amp::Level::O1 : amp::Level::O0);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}    loss = torch::nn::functional::mse_loss(amp::cast_to_adapter_tensor(amp_model(x)), y);{{$}}
// CHECK-FIXES-NEXT: {{^}}    return scaler ? scaler->scale(loss) : loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(*opt));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [loss_value, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  if (scaler) {{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler->step(*opt, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler->update();{{$}}
// CHECK-FIXES-NEXT: {{^}}  } else {{{$}}
// CHECK-FIXES-NEXT: {{^}}    amp::step(opt, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }{{$}}
// CHECK-FIXES-NEXT: {{^}}}{{$}}
