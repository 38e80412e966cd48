// RUN: %check_amp %s %t.cpp
// amp-clip-grad-norm: clipping .grad inside a scaled step becomes clipping the explicit grads; a
// logged norm stays available through amp::global_norm (the pre-clip norm, as clip_grad_norm_
// returns it).
#include <torch/torch.h>
#include "scaler.h"
#include <cstdio>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void logged_norm(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
                 const torch::Tensor &target, double max_norm) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = torch::nll_loss(model->forward(data), target);
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.unscale_(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
  auto norm = torch::nn::utils::clip_grad_norm_(model->parameters(), max_norm);
  // CHECK-MESSAGES: :[[@LINE-1]]:15: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
  std::printf("grad norm %f\n", norm);
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

void norm_in_expression(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
                        const torch::Tensor &target, double max_norm) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = torch::nll_loss(model->forward(data), target);
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.unscale_(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
  std::printf("grad norm %f\n", torch::nn::utils::clip_grad_norm_(optimizer.parameters(), max_norm));
  // CHECK-MESSAGES: :[[@LINE-1]]:33: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}#include <amp/torch.h>{{$}}
// CHECK-FIXES: {{^}}  amp::GradScaler scaler;{{$}}
// CHECK-FIXES: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {
// CHECK-FIXES-NEXT: {{^}}    loss = torch::nll_loss(amp::cast_to_adapter_tensor(amp_model->forward(data)), target);{{$}}
// CHECK-FIXES-NEXT: {{^}}    return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.unscale_(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::check_holds(optimizer, model->parameters());{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto norm = amp::clip_by_global_norm_(grads, max_norm).item<double>();{{$}}
// CHECK-FIXES: {{^}}  scaler.step(optimizer, grads);{{$}}
// CHECK-FIXES: {{^}}  amp::GradScaler scaler;{{$}}
// CHECK-FIXES: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {
// CHECK-FIXES-NEXT: {{^}}    loss = torch::nll_loss(amp::cast_to_adapter_tensor(amp_model->forward(data)), target);{{$}}
// CHECK-FIXES-NEXT: {{^}}    return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.unscale_(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  std::printf("grad norm %f\n", amp::clip_by_global_norm_(grads, max_norm).item<double>());{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(optimizer, grads);{{$}}

// The parameter list held in a local first (`auto params = model->parameters();`): the same
// tensors, so the clip still covers the model's parameters (issue #11 item 9: it was reported as
// "a parameter set other than the model's").
void params_in_a_local(Net &model, torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler,
                       const torch::Tensor &data) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto loss = model->forward(data).sum();
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.unscale_(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
  auto params = model->parameters();
  torch::nn::utils::clip_grad_norm_(params, 1.0);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}  auto params = model->parameters();{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::check_holds(optimizer, params);{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::clip_by_global_norm_(grads, 1.0);{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(optimizer, grads);{{$}}

// clip_grad_value_ (a clip by value, its rule's clip-value-arg) becomes amp::clip_by_value_ on the
// explicit grads: the same clamp of every element, in place.
void clip_by_value(Net &model, torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler,
                   const torch::Tensor &data, double limit) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto loss = model->forward(data).sum();
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.unscale_(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
  torch::nn::utils::clip_grad_value_(model->parameters(), limit / 2);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_value_(grads, clip_value) [amp-clip-grad-norm]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}  scaler.unscale_(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::clip_by_value_(grads, limit / 2);{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(optimizer, grads);{{$}}

// A clip skipped when max_norm is 0, its norm kept in a member of the same name as the variable
// the rewrite used to declare: the call becomes the in-place clip where it stood, under the if
// (it was split into a declaration and an assignment, the assignment escaping the braceless if
// and reading the member: red-team A v11).
struct Stats { double grad_norm = -1.0; };
class NormTrainer {
public:
  void step(const torch::Tensor &data, const torch::Tensor &target, double max_norm) {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
    auto loss = torch::nll_loss(model->forward(data), target);
    at::autocast::set_enabled(false);
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
    scaler.unscale_(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: unscale_() without explicit grads{{.*}} [amp-scaler-unscale]
    if (max_norm > 0)
      stats.grad_norm = torch::nn::utils::clip_grad_norm_(model->parameters(), max_norm);
    // CHECK-MESSAGES: :[[@LINE-1]]:25: warning: clipping the parameters' .grad inside a scaled step{{.*}} [amp-clip-grad-norm]
    scaler.step(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler.update();
    std::printf("%f %f\n", stats.grad_norm, grad_norm);
  }
  Net model;
  torch::optim::SGD optimizer{model->parameters(), torch::optim::SGDOptions(0.1)};
  torch::amp::GradScaler scaler;
  Stats stats;
  double grad_norm = 0;
};
// CHECK-FIXES: {{^}}    scaler.unscale_(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}    if (max_norm > 0){{$}}
// CHECK-FIXES-NEXT: {{^}}      stats.grad_norm = amp::clip_by_global_norm_(grads, max_norm).item<double>();{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.step(optimizer, grads);{{$}}
