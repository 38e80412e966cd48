// RUN: %check_amp %s %t.cpp --level=O1
// WILD: an RAII guard whose constructor takes the autocast dtype (`CpuAutocast(ScalarType dtype =
// kBFloat16)`). The model is converted with the dtype of the guard's use: its argument, or the
// parameter's default where the use gives none. A dtype the use computes in the loop (declared
// after where the model is converted) and one the constructor computes itself are reported.
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

struct CpuAutocast {
  explicit CpuAutocast(at::ScalarType dtype = at::kBFloat16) {
    at::autocast::set_autocast_cpu_dtype(dtype);
    at::autocast::set_cpu_enabled(true);
  }
  ~CpuAutocast() { at::autocast::set_cpu_enabled(false); }
};

struct ChoosingAutocast {
  explicit ChoosingAutocast(bool half) {
    at::ScalarType dtype = half ? at::kHalf : at::kBFloat16;
    at::autocast::set_autocast_cpu_dtype(dtype);
    // CHECK-MESSAGES: :[[@LINE-1]]:42: warning: not migrated automatically: autocast computes in the dtype `dtype`, which the guard's constructor computes; convert the model with that dtype by hand (amp::auto_mixed_precision(model, level, dtype)) or migrate by hand [amp-manual-migration]
    at::autocast::set_cpu_enabled(true);
  }
  ~ChoosingAutocast() { at::autocast::set_cpu_enabled(false); }
};

void with_argument(Net &model, torch::optim::SGD &opt, const torch::Tensor &x, const torch::Tensor &y) {
  torch::amp::GradScaler scaler;
  for (int step = 0; step < 10; ++step) {
    opt.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
    torch::Tensor loss;
    {
      CpuAutocast ac(at::kHalf);
      // CHECK-MESSAGES: :[[@LINE-1]]:19: warning: autocast scope opened by guard 'CpuAutocast'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
      loss = torch::mse_loss(model->forward(x), y);
    }
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  }
}

void with_default(Net &model, torch::optim::SGD &opt, const torch::Tensor &x, const torch::Tensor &y) {
  torch::amp::GradScaler scaler;
  for (int step = 0; step < 10; ++step) {
    opt.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
    torch::Tensor loss;
    {
      CpuAutocast ac;
      // CHECK-MESSAGES: :[[@LINE-1]]:19: warning: autocast scope opened by guard 'CpuAutocast'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
      loss = torch::mse_loss(model->forward(x), y);
    }
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  }
}

void with_loop_local(Net &model, torch::optim::SGD &opt, const torch::Tensor &x, const torch::Tensor &y) {
  torch::amp::GradScaler scaler;
  for (int step = 0; step < 10; ++step) {
    opt.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() clears the .grad that this step's backward fills; keep it while the step is migrated by hand (see amp-manual-migration): with explicit gradients from amp::value_and_grad it is redundant [amp-zero-grad]
    at::ScalarType dt = step < 5 ? at::kHalf : at::kBFloat16;
    torch::Tensor loss;
    {
      CpuAutocast ac(dt);
      // CHECK-MESSAGES: :[[@LINE-1]]:19: warning: autocast scope opened by guard 'CpuAutocast'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
      // CHECK-MESSAGES: :[[@LINE-2]]:22: warning: not migrated automatically: autocast computes in the dtype `dt`, which is declared after where the model is converted once (before the loop); convert the model with that dtype by hand (amp::auto_mixed_precision(model, level, dtype)) or migrate by hand [amp-manual-migration]
      loss = torch::mse_loss(model->forward(x), y);
    }
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  }
}

void computed_in_constructor(Net &model, torch::optim::SGD &opt, const torch::Tensor &x,
                             const torch::Tensor &y) {
  torch::amp::GradScaler scaler;
  for (int step = 0; step < 10; ++step) {
    opt.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() clears the .grad that this step's backward fills; keep it while the step is migrated by hand (see amp-manual-migration): with explicit gradients from amp::value_and_grad it is redundant [amp-zero-grad]
    torch::Tensor loss;
    {
      ChoosingAutocast ac(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:24: warning: autocast scope opened by guard 'ChoosingAutocast'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
      loss = torch::mse_loss(model->forward(x), y);
    }
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  }
}
// CHECK-FIXES: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1, at::kHalf);{{$}}
// CHECK-FIXES: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1, at::kBFloat16);{{$}}
