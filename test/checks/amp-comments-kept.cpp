// RUN: %check_amp %s %t.cpp
// Every user byte that is not part of a rewritten construct survives the rewrite (issue #13 item 3):
// a comment on every line of a step, comments inside a hoisted declaration, after removed
// statements (kept at their indentation) and after the scaled backward (kept on the line of the
// value_and_grad call).
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

float train(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
            const torch::Tensor &target, double max_norm) {
  torch::amp::GradScaler scaler; // c1 scaler
  optimizer.zero_grad(); // c2 zero
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
  at::autocast::set_enabled(true); // c3 enable
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto /* c4a */ output = /* c4b */ model->forward(data); // c4 forward
  int /* c5a */ n = /* c5b */ 9; // c5 hoisted
  auto loss = torch::nll_loss(output, target) * n; // c6 loss
  at::autocast::clear_cache(); // c7 cache
  at::autocast::set_enabled(false); // c8 disable
  scaler.scale(loss).backward(); // c9 backward
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.unscale_(optimizer); // c10 unscale
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
  torch::nn::utils::clip_grad_norm_(model->parameters(), max_norm); // c11 clip
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
  scaler.step(optimizer); // c12 step
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update(); // c13 update
  return loss.item<float>() * n; // c14 return
}
// CHECK-FIXES: {{^}}float train(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,{{$}}
// CHECK-FIXES-NEXT: {{^}}            const torch::Tensor &target, double max_norm) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::GradScaler scaler; // c1 scaler{{$}}
// CHECK-FIXES-NEXT: {{^}}  // c2 zero{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  int n;{{$}}
// CHECK-FIXES-NEXT: {{^}}  torch::Tensor loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}    // c3 enable{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto /* c4a */ output = /* c4b */ amp::cast_to_adapter_tensor(amp_model->forward(data)); // c4 forward{{$}}
// CHECK-FIXES-NEXT: {{^}}    /* c5a */ n = /* c5b */ 9; // c5 hoisted{{$}}
// CHECK-FIXES-NEXT: {{^}}    loss = torch::nll_loss(output, target) * n; // c6 loss{{$}}
// CHECK-FIXES-NEXT: {{^}}    // c7 cache{{$}}
// CHECK-FIXES-NEXT: {{^}}    // c8 disable{{$}}
// CHECK-FIXES-NEXT: {{^}}    return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn(); // c9 backward{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.unscale_(optimizer, grads); // c10 unscale{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::check_holds(optimizer, model->parameters());{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::clip_by_global_norm_(grads, max_norm); // c11 clip{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(optimizer, grads); // c12 step{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.update(); // c13 update{{$}}
// CHECK-FIXES-NEXT: {{^}}  return loss.item<float>() * n; // c14 return{{$}}
// CHECK-FIXES-NEXT: {{^}}}{{$}}

// Comments inside the arguments of a rewritten call stay with the argument they precede (issue #37
// item 12: they were lost with the parameter list the clip no longer takes).
void comments_in_arguments(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
                           const torch::Tensor &target, double max_norm) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = torch::nll_loss(model->forward(/* the batch */ data), target);
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.unscale_(optimizer /* before the clip */);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
  torch::nn::utils::clip_grad_norm_(model->parameters(), /* why */ max_norm);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
  double n = torch::nn::utils::clip_grad_norm_(model->parameters(), // keep it small
  // CHECK-MESSAGES: :[[@LINE-1]]:14: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
                                               max_norm);
  scaler.step(/* the optimizer */ optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
  (void)n;
}
// CHECK-FIXES: {{^}}    loss = torch::nll_loss(amp::cast_to_adapter_tensor(amp_model->forward(/* the batch */ data)), target);{{$}}
// CHECK-FIXES: {{^}}  scaler.unscale_(optimizer /* before the clip */, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::check_holds(optimizer, model->parameters());{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::clip_by_global_norm_(grads, /* why */ max_norm);{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::check_holds(optimizer, model->parameters());{{$}}
// CHECK-FIXES-NEXT: {{^}}  double n = amp::clip_by_global_norm_(grads, // keep it small{{$}}
// CHECK-FIXES-NEXT: {{^}}                                               max_norm).item<double>();{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(/* the optimizer */ optimizer, grads);{{$}}
