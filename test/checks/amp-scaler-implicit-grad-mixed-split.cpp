// RUN: %check_amp %s %t.cpp --level=O1
// A mixed step split over several ifs on one condition, with the scaler held as a std::optional
// (or a pointer) that is engaged only in AMP mode and one zero_grad() for both paths:
//   if (scaler) scaler->scale(loss).backward(); else loss.backward();
//   ...
//   if (scaler) { scaler->step(opt); scaler->update(); } else opt.step();
// The if that held only the two backwards goes; the others step on the grads.
#include <torch/torch.h>
#include <optional>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void train_optional(Net &model, torch::optim::SGD &opt, const torch::Tensor &x, bool use_amp) {
  std::optional<torch::amp::GradScaler> scaler;
  if (use_amp)
    scaler = torch::amp::GradScaler(1024.0);
  for (int i = 0; i < 8; ++i) {
    opt.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
    if (scaler)
      at::autocast::set_enabled(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss = model->forward(x).mean();
    if (scaler)
      at::autocast::set_enabled(false);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: note: the scope ends here
      // CHECK-MESSAGES: :[[@LINE+5]]:7: note: the plain path (no scaler) backpropagates the loss computed in this scope here; it takes the grads of amp::value_and_grad too, and its step becomes amp::step(optimizer, grads)
    if (scaler)
      scaler->scale(loss).backward();
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    else
      loss.backward();
    if (scaler)
      scaler->unscale_(opt);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
    if (scaler) {
      scaler->step(opt);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
      scaler->update();
    } else
      opt.step();
  }
}
// CHECK-FIXES: {{^}}#include <amp/torch.h>{{$}}
// CHECK-FIXES: {{^}}  std::optional<amp::GradScaler> scaler;{{$}}
// CHECK-FIXES-NEXT: {{^}}  if (use_amp){{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler = amp::GradScaler(amp::GradScalerOptions().init_scale(1024.0));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, scaler ? amp::Level::O1 : amp::Level::O0, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  for (int i = 0; i < 8; ++i) {{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}      auto loss = amp::cast_to_adapter_tensor(amp_model->forward(x)).mean();{{$}}
// CHECK-FIXES-NEXT: {{^}}      return scaler ? scaler->scale(loss) : loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}    }, amp::parameters_of(opt));{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto [loss_value, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}    if (scaler){{$}}
// CHECK-FIXES-NEXT: {{^}}      scaler->unscale_(opt, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}    amp::check_holds(opt, model->parameters());{{$}}
// CHECK-FIXES-NEXT: {{^}}    amp::clip_by_global_norm_(grads, 1.0);{{$}}
// CHECK-FIXES-NEXT: {{^}}    if (scaler) {{{$}}
// CHECK-FIXES-NEXT: {{^}}      scaler->step(opt, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}      scaler->update();{{$}}
// CHECK-FIXES-NEXT: {{^}}    } else{{$}}
// CHECK-FIXES-NEXT: {{^}}      amp::step(opt, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }{{$}}
// CHECK-FIXES-NEXT: {{^}}}{{$}}

// A pointer scaler (null in fp32 mode) tested with `!= nullptr`, an autocast scope that is always
// on (the model is converted at the level), the plain path in a block beside a one-line scaled one.
void train_pointer(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler *scaler,
                   const torch::Tensor &x) {
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = model->forward(x).sum();
    at::autocast::set_enabled(false);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: note: the scope ends here
    // CHECK-MESSAGES: :[[@LINE+6]]:5: note: the plain path (no scaler) backpropagates the loss computed in this scope here; it takes the grads of amp::value_and_grad too, and its step becomes amp::step(optimizer, grads)
  }
  if (scaler != nullptr)
    scaler->scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  else {
    loss.backward();
    opt.step();
  }
  if (scaler != nullptr) {
    scaler->step(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler->update();
  }
}
// CHECK-FIXES: {{^}}void train_pointer(Net &model, torch::optim::SGD &opt, amp::GradScaler *scaler,{{$}}
// CHECK-FIXES-NEXT: {{^}}                   const torch::Tensor &x) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  torch::Tensor loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}    loss = amp::cast_to_adapter_tensor(amp_model->forward(x)).sum();{{$}}
// CHECK-FIXES-NEXT: {{^}}    return (scaler != nullptr) ? scaler->scale(loss) : loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(opt));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [loss_value, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  if (scaler != nullptr){{$}}
// CHECK-FIXES-NEXT: {{^}}    {}{{$}}
// CHECK-FIXES-NEXT: {{^}}  else {{{$}}
// CHECK-FIXES-NEXT: {{^}}    amp::step(opt, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }{{$}}
// CHECK-FIXES-NEXT: {{^}}  if (scaler != nullptr) {{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler->step(opt, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler->update();{{$}}
// CHECK-FIXES-NEXT: {{^}}  }{{$}}
// CHECK-FIXES-NEXT: {{^}}}{{$}}
