// RUN: %check_amp %s %t.cpp --level=O1
// WILD: the autocast calls spelled per libtorch version (2.4 deprecated set_cpu_enabled for
// set_autocast_enabled(device, on)): `#if TORCH_VERSION_MAJOR >= 2 ... #else ... #endif` around
// each scope call. The skipped branch holds the same call in the other spelling, so the whole
// conditional goes with the scope, and the rewrite compiles under either version. A skipped
// branch that sets a dtype of its own, or enables another device, would be lost: reported as AMP
// code under an inactive branch.
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void per_version(Net &model, torch::optim::SGD &opt, const torch::Tensor &x, const torch::Tensor &y) {
  torch::amp::GradScaler scaler;
  for (int step = 0; step < 10; ++step) {
    opt.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
#if TORCH_VERSION_MAJOR >= 2
    at::autocast::set_autocast_enabled(at::kCPU, true);
#else
    at::autocast::set_cpu_enabled(true); // 1.x
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_cpu_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
#endif
    auto loss = torch::mse_loss(model->forward(x), y);
#if TORCH_VERSION_MAJOR >= 2
    at::autocast::set_autocast_enabled(at::kCPU, false);
#else
    at::autocast::set_cpu_enabled(false);
#endif
    at::autocast::clear_cache();
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  }
}

void skipped_dtype(Net &model, torch::optim::SGD &opt, const torch::Tensor &x, const torch::Tensor &y) {
  torch::amp::GradScaler scaler;
  for (int step = 0; step < 10; ++step) {
    opt.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() clears the .grad that this step's backward fills; keep it while the step is migrated by hand (see amp-manual-migration): with explicit gradients from amp::value_and_grad it is redundant [amp-zero-grad]
#if TORCH_VERSION_MAJOR >= 2
// CHECK-MESSAGES: :[[@LINE-1]]:1: warning: not migrated automatically: AMP code under an inactive preprocessor branch in this function; migrate each configuration by hand or run once per configuration [amp-manual-migration]
    at::autocast::set_autocast_dtype(at::kCPU, at::kHalf);
    at::autocast::set_autocast_enabled(at::kCPU, true);
#else
    at::autocast::set_cpu_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_cpu_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
#endif
    auto loss = torch::mse_loss(model->forward(x), y);
    at::autocast::set_cpu_enabled(false);
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  }
}

void skipped_other_device(Net &model, torch::optim::SGD &opt, const torch::Tensor &x, const torch::Tensor &y) {
  torch::amp::GradScaler scaler;
  for (int step = 0; step < 10; ++step) {
    opt.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() clears the .grad that this step's backward fills; keep it while the step is migrated by hand (see amp-manual-migration): with explicit gradients from amp::value_and_grad it is redundant [amp-zero-grad]
#ifdef USE_CUDA
// CHECK-MESSAGES: :[[@LINE-1]]:1: warning: not migrated automatically: AMP code under an inactive preprocessor branch in this function; migrate each configuration by hand or run once per configuration [amp-manual-migration]
    at::autocast::set_enabled(true);
#else
    at::autocast::set_cpu_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_cpu_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
#endif
    auto loss = torch::mse_loss(model->forward(x), y);
    at::autocast::set_cpu_enabled(false);
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  }
}
// CHECK-FIXES: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1);{{$}}
// CHECK-FIXES-NEXT: {{^}}  for (int step = 0; step < 10; ++step) {{[{]}}{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto grad_fn = amp::value_and_grad([&] {{[{]}}{{$}}
// CHECK-FIXES-NEXT: {{^}}      auto loss = torch::mse_loss(amp::cast_to_adapter_tensor(amp_model->forward(x)), y);{{$}}
