// RUN: %check_amp %s %t.cpp
// WILD: a macro pair. Reported at the macro's use; the uses go (each whole expansion is the scope
// call); the macro bodies are never edited.
#include <torch/torch.h>
#include "scaler.h"

#define AMP_ON() { at::autocast::set_enabled(true); }
#define AMP_OFF() { at::autocast::set_enabled(false); at::autocast::clear_cache(); }
#define CPU_AMP_ON() do { at::autocast::set_autocast_cpu_dtype(at::kBFloat16); at::autocast::set_cpu_enabled(true); } while (0)
#define CPU_AMP_OFF() do { at::autocast::set_cpu_enabled(false); at::autocast::clear_cache(); } while (0)

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void train(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
           const torch::Tensor &target) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    AMP_ON();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope opened by a macro (expands to 'at::autocast::set_enabled'); convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto output = model->forward(data);
    loss = torch::nll_loss(output, target);
    AMP_OFF();
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

// `if (x) AMP_ON();`: the whole if goes with the use.
void guarded(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
             const torch::Tensor &target, bool use_amp) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    if (use_amp) AMP_ON();
    // CHECK-MESSAGES: :[[@LINE-1]]:18: warning: autocast scope opened by a macro (expands to 'at::autocast::set_enabled'); convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto output = model->forward(data);
    loss = torch::nll_loss(output, target);
    if (use_amp) AMP_OFF();
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
// The dtype set inside the macro body: the conversion takes it as the macro spells it.
void dtype_in_macro(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
                    const torch::Tensor &target) {
  torch::amp::GradScaler scaler;
  for (int i = 0; i < 10; ++i) {
    CPU_AMP_ON();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope opened by a macro (expands to 'at::autocast::set_cpu_enabled'); convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss = torch::nll_loss(model->forward(data), target);
    CPU_AMP_OFF();
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  }
}
// CHECK-FIXES: {{^}}#include <amp/torch.h>{{$}}
// CHECK-FIXES-EMPTY:
// CHECK-FIXES-NEXT: {{^}}#define AMP_ON() { at::autocast::set_enabled(true); }
// CHECK-FIXES-NEXT: {{^}}#define AMP_OFF() { at::autocast::set_enabled(false); at::autocast::clear_cache(); }
#define CPU_AMP_ON() do { at::autocast::set_autocast_cpu_dtype(at::kBFloat16); at::autocast::set_cpu_enabled(true); } while (0)
#define CPU_AMP_OFF() do { at::autocast::set_cpu_enabled(false); at::autocast::clear_cache(); } while (0)
// CHECK-FIXES: {{^}}  amp::GradScaler scaler;{{$}}
// CHECK-FIXES: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {
// CHECK-FIXES-NEXT: {{^}}    auto output = amp::cast_to_adapter_tensor(amp_model->forward(data));{{$}}
// CHECK-FIXES: {{^}}    return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(optimizer, grads);{{$}}
// CHECK-FIXES: {{^}}  amp::GradScaler scaler;{{$}}
// CHECK-FIXES: {{^}}  auto amp_model = amp::auto_mixed_precision(model, use_amp ? amp::Level::O2 : amp::Level::O0, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {
// CHECK-FIXES-NEXT: {{^}}    auto output = amp::cast_to_adapter_tensor(amp_model->forward(data));{{$}}
// CHECK-FIXES: {{^}}    return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(optimizer, grads);{{$}}
// CHECK-FIXES: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, at::kBFloat16);{{$}}
// CHECK-FIXES-NEXT: {{^}}  for (int i = 0; i < 10; ++i) {{[{]}}{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto grad_fn = amp::value_and_grad([&] {{[{]}}{{$}}
// CHECK-FIXES-NEXT: {{^}}      auto loss = torch::nll_loss(amp::cast_to_adapter_tensor(amp_model->forward(data)), target);{{$}}

// The macro disables autocast in a `catch` before rethrowing too: no path leaves it on (the
// macro's own braces are not the block it is used in), so no amp-autocast-leak; the handler's
// use goes with the scope.
void rethrows(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
              const torch::Tensor &target) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  CPU_AMP_ON();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope opened by a macro (expands to 'at::autocast::set_cpu_enabled'){{.*}} [amp-autocast-scope]
  try {
    loss = torch::nll_loss(model->forward(data), target);
  } catch (...) {
    CPU_AMP_OFF();
    throw;
  }
  CPU_AMP_OFF();
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads{{.*}} [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}void rethrows(
// CHECK-FIXES: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, at::kBFloat16);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {{[{]}}{{$}}
// CHECK-FIXES-NEXT: {{^}}    try {{[{]}}{{$}}
// CHECK-FIXES-NEXT: {{^}}      loss = torch::nll_loss(amp::cast_to_adapter_tensor(amp_model->forward(data)), target);{{$}}
// CHECK-FIXES-NEXT: {{^}}    } catch (...) {{[{]}}{{$}}
// CHECK-FIXES-NEXT: {{^}}      throw;{{$}}
