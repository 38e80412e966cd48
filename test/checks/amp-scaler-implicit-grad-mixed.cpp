// RUN: %check_amp %s %t.cpp
// A mixed step in the block form: `if (COND) { scaled path } else { plain path }` after one
// forward region and one zero_grad(). The region becomes the function given to value_and_grad,
// returning `COND ? scaler.scale(loss) : loss` (the grads are those of whichever backward ran);
// the scaled branch unscales, clips and steps on the grads, the plain branch clips them and steps
// with amp::step. The model is converted at the scope's run-time flag, else at the level.
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

// The condition is the scaler's own switch; the loss is used after the step (hoisted).
float train_is_enabled(Net &model, torch::optim::SGD &opt, const torch::Tensor &x,
                       const torch::Tensor &y, bool use_amp) {
  torch::amp::GradScaler scaler(1024.0, 2.0, 0.5, 2000, use_amp);
  opt.zero_grad();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto loss = torch::nll_loss(model->forward(x), y);
  at::autocast::set_enabled(false);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: note: the scope ends here
  // CHECK-MESSAGES: :[[@LINE+12]]:5: note: the plain path (no scaler) backpropagates the loss computed in this scope here; it takes the grads of amp::value_and_grad too, and its step becomes amp::step(optimizer, grads)
  if (scaler.is_enabled()) {
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.unscale_(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
    scaler.step(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  } else {
    loss.backward();
    torch::nn::utils::clip_grad_norm_(model->parameters(), 0.5);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: clipping the parameters' .grad on the plain path (no scaler) of a mixed step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
    opt.step();
  }
  return loss.item<float>();
}
// CHECK-FIXES: {{^}}#include <amp/torch.h>{{$}}
// CHECK-FIXES: {{^}}  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024.0).growth_factor(2.0).backoff_factor(0.5).growth_interval(2000).enabled(use_amp));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  torch::Tensor loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}    loss = torch::nll_loss(amp::cast_to_adapter_tensor(amp_model->forward(x)), y);{{$}}
// CHECK-FIXES-NEXT: {{^}}    return scaler.is_enabled() ? scaler.scale(loss) : loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(opt));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [loss_value, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  if (scaler.is_enabled()) {{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.unscale_(opt, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}    amp::check_holds(opt, model->parameters());{{$}}
// CHECK-FIXES-NEXT: {{^}}    amp::clip_by_global_norm_(grads, 1.0);{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.step(opt, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.update();{{$}}
// CHECK-FIXES-NEXT: {{^}}  } else {{{$}}
// CHECK-FIXES-NEXT: {{^}}    amp::check_holds(opt, model->parameters());{{$}}
// CHECK-FIXES-NEXT: {{^}}    amp::clip_by_global_norm_(grads, 0.5);{{$}}
// CHECK-FIXES-NEXT: {{^}}    amp::step(opt, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }{{$}}
// CHECK-FIXES-NEXT: {{^}}  return loss.item<float>();{{$}}

struct Config {
  bool fp32 = false;
};

// The plain path first (`if (!...)`), a member flag through a reference, inside a training loop:
// the model is converted once before the loop at the scope's flag.
void train_plain_first(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler,
                       const Config &cfg, const torch::Tensor &x, const torch::Tensor &y) {
  for (int i = 0; i < 4; ++i) {
    opt.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
    if (!cfg.fp32)
      at::autocast::set_enabled(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss = torch::nll_loss(model->forward(x), y);
    if (!cfg.fp32)
      at::autocast::set_enabled(false);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: note: the scope ends here
      // CHECK-MESSAGES: :[[@LINE+2]]:7: note: the plain path (no scaler) backpropagates the loss computed in this scope here; it takes the grads of amp::value_and_grad too, and its step becomes amp::step(optimizer, grads)
    if (cfg.fp32) {
      loss.backward();
      opt.step();
    } else {
      scaler.scale(loss).backward();
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
      scaler.step(opt);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
      scaler.update();
    }
  }
}
// CHECK-FIXES: {{^}}void train_plain_first(Net &model, torch::optim::SGD &opt, amp::GradScaler &scaler,{{$}}
// CHECK-FIXES-NEXT: {{^}}                       const Config &cfg, const torch::Tensor &x, const torch::Tensor &y) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, !cfg.fp32 ? amp::Level::O2 : amp::Level::O0, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  for (int i = 0; i < 4; ++i) {{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}      auto loss = torch::nll_loss(amp::cast_to_adapter_tensor(amp_model->forward(x)), y);{{$}}
// CHECK-FIXES-NEXT: {{^}}      return cfg.fp32 ? loss : scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}    }, amp::parameters_of(opt));{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto [loss_value, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}    if (cfg.fp32) {{{$}}
// CHECK-FIXES-NEXT: {{^}}      amp::step(opt, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}    } else {{{$}}
// CHECK-FIXES-NEXT: {{^}}      scaler.step(opt, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}      scaler.update();{{$}}
// CHECK-FIXES-NEXT: {{^}}    }{{$}}
// CHECK-FIXES-NEXT: {{^}}  }{{$}}
// CHECK-FIXES-NEXT: {{^}}}{{$}}

// A gradient loop on the plain path carries over to the grads; comments stay where they were.
void train_grad_loop(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler,
                     const torch::Tensor &x, bool use_amp, double world) {
  opt.zero_grad();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE+3]]:3: note: the scope ends here
  // CHECK-MESSAGES: :[[@LINE+10]]:5: note: the plain path (no scaler) backpropagates the loss computed in this scope here; it takes the grads of amp::value_and_grad too, and its step becomes amp::step(optimizer, grads)
  auto loss = model->forward(x).sum();
  at::autocast::set_enabled(false);
  if (use_amp) {
    scaler.scale(loss).backward(); // scaled
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  } else {
    loss.backward(); // fp32
    for (auto &p : model->parameters())
      p.mutable_grad().div_(world);
    opt.step();
  }
}

// CHECK-FIXES: {{^}}void train_grad_loop(Net &model, torch::optim::SGD &opt, amp::GradScaler &scaler,{{$}}
// CHECK-FIXES: {{^}}  auto [loss_value, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  if (use_amp) {{{$}}
// CHECK-FIXES-NEXT: {{^}}    // scaled{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.step(opt, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.update();{{$}}
// CHECK-FIXES-NEXT: {{^}}  } else {{{$}}
// CHECK-FIXES-NEXT: {{^}}    // fp32{{$}}
// CHECK-FIXES-NEXT: {{^}}    for (auto &p_grad : grads){{$}}
// CHECK-FIXES-NEXT: {{^}}      p_grad.div_(world);{{$}}
// CHECK-FIXES-NEXT: {{^}}    amp::step(opt, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }{{$}}
// CHECK-FIXES-NEXT: {{^}}}{{$}}
