// RUN: %check_amp %s %t.cpp
// WILD: autocast switched on before the training loop and off after it (a call pair, each under
// `if (use_amp)`; a guard declared before the loop; a guard ended after it). Every iteration's
// forward runs under the scope, so the step's forward region is the loop body from the first
// statement that runs the model up to the scaled backward; the scope's calls go where they are
// and the model is converted once, before the loop.
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

struct AmpGuard {
  explicit AmpGuard(bool on) { at::autocast::set_enabled(on); }
  void End() { at::autocast::set_enabled(false); }
  ~AmpGuard() { at::autocast::set_enabled(false); }
};

void pair_around_loop(Net &model, torch::optim::SGD &opt, const std::vector<torch::Tensor> &data) {
  torch::amp::GradScaler scaler;
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  for (const auto &x : data) {
    opt.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
    auto input = x * 2;
    auto loss = model->forward(input).sum();
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  }
  at::autocast::set_enabled(false);
}

void flag_around_epochs(Net &model, torch::optim::SGD &opt, const std::vector<torch::Tensor> &data,
                        bool use_amp) {
  torch::amp::GradScaler scaler;
  if (use_amp)
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  for (int epoch = 0; epoch < 3; ++epoch) {
    for (const auto &x : data) {
      auto loss = model->forward(x).sum();
      scaler.scale(loss).backward();
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
      scaler.step(opt);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
      scaler.update();
      opt.zero_grad();
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
    }
  }
  if (use_amp)
    at::autocast::set_enabled(false);
}

void guard_before_loop(Net &model, torch::optim::SGD &opt, const std::vector<torch::Tensor> &data) {
  torch::amp::GradScaler scaler;
  AmpGuard guard(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:12: warning: autocast scope opened by guard 'AmpGuard'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  for (const auto &x : data) {
    auto loss = model->forward(x).sum();
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  }
  guard.End();
}

// The model also runs in the scope after the step (an evaluation in the same iteration): it would
// leave the scope's effect behind on the unconverted model, so the step is reported.
void forward_after_step(Net &model, torch::optim::SGD &opt, const std::vector<torch::Tensor> &data) {
  torch::amp::GradScaler scaler;
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  for (const auto &x : data) {
    auto loss = model->forward(x).sum();
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
    auto eval = model->forward(x);
    // CHECK-MESSAGES: :[[@LINE-1]]:17: warning: not migrated automatically: `model->forward(x)` runs in the autocast scope around the loop but outside the step's forward region; after the rewrite it would run in fp32 on the unconverted model: migrate this step by hand [amp-manual-migration]
  }
  at::autocast::set_enabled(false);
}

// The scope opens before the loop and closes inside it, after the first step: only the first
// iteration's forward ran under it (a bug of the original), so the step is reported.
void closes_inside(Net &model, torch::optim::SGD &opt, const std::vector<torch::Tensor> &data) {
  torch::amp::GradScaler scaler;
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: not migrated automatically: the autocast scope opens before the loop of the step but closes inside it (line {{[0-9]+}}): later iterations run their forward without autocast; migrate this step by hand [amp-manual-migration]
  for (const auto &x : data) {
    auto loss = model->forward(x).sum();
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
    at::autocast::set_enabled(false);
  }
}
// CHECK-FIXES: {{^}}void pair_around_loop(Net &model, torch::optim::SGD &opt, const std::vector<torch::Tensor> &data) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::GradScaler scaler;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  for (const auto &x : data) {{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto input = x * 2;{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}      auto loss = amp::cast_to_adapter_tensor(amp_model->forward(input)).sum();{{$}}
// CHECK-FIXES-NEXT: {{^}}      return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}    }, amp::parameters_of(opt));{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.step(opt, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.update();{{$}}
// CHECK-FIXES-NEXT: {{^}}  }{{$}}
// CHECK-FIXES-NEXT: {{^}}}{{$}}
// CHECK-FIXES: {{^}}void flag_around_epochs(Net &model, torch::optim::SGD &opt, const std::vector<torch::Tensor> &data,{{$}}
// CHECK-FIXES-NEXT: {{^}}                        bool use_amp) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::GradScaler scaler;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, use_amp ? amp::Level::O2 : amp::Level::O0, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  for (int epoch = 0; epoch < 3; ++epoch) {{{$}}
// CHECK-FIXES-NEXT: {{^}}    for (const auto &x : data) {{{$}}
// CHECK-FIXES-NEXT: {{^}}      auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}        auto loss = amp::cast_to_adapter_tensor(amp_model->forward(x)).sum();{{$}}
// CHECK-FIXES-NEXT: {{^}}        return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}      }, amp::parameters_of(opt));{{$}}
// CHECK-FIXES-NEXT: {{^}}      auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}      scaler.step(opt, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}      scaler.update();{{$}}
// CHECK-FIXES-NEXT: {{^}}    }{{$}}
// CHECK-FIXES-NEXT: {{^}}  }{{$}}
// CHECK-FIXES-NEXT: {{^}}}{{$}}
// CHECK-FIXES: {{^}}void guard_before_loop(Net &model, torch::optim::SGD &opt, const std::vector<torch::Tensor> &data) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::GradScaler scaler;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  for (const auto &x : data) {{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}      auto loss = amp::cast_to_adapter_tensor(amp_model->forward(x)).sum();{{$}}
// CHECK-FIXES-NEXT: {{^}}      return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}    }, amp::parameters_of(opt));{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.step(opt, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.update();{{$}}
// CHECK-FIXES-NEXT: {{^}}  }{{$}}
// CHECK-FIXES-NEXT: {{^}}}{{$}}
