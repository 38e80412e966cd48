// RUN: %check_amp %s %t.cpp
// WILD: a model whose forward asks whether autocast is on (to cast its input, or to pick a
// kernel). After the migration autocast is never enabled, so the query answers false and the code
// takes its fp32 path: the step is reported, with the query named. A model that asks nothing is
// rewritten as usual.
#include <torch/torch.h>
#include "scaler.h"

struct CastingNetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x) {
    if (at::autocast::is_enabled())
      return body(x.to(at::autocast::get_autocast_gpu_dtype()));
    return body(x);
  }
  torch::Tensor body(const torch::Tensor &x);
};
TORCH_MODULE(CastingNet);

// The query in a helper method the forward calls.
struct HelperNetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x) { return pick(x); }
  torch::Tensor pick(const torch::Tensor &x) {
    return at::autocast::is_cpu_enabled() ? x * 2 : x;
  }
};
TORCH_MODULE(HelperNet);

void train_casting(CastingNet &model, torch::optim::SGD &opt, const torch::Tensor &x) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = model->forward(x).sum();
    // CHECK-MESSAGES: :[[@LINE-1]]:12: warning: not migrated automatically: the model's forward asks whether autocast is on (`at::autocast::is_enabled()` at {{.*}}:{{[0-9]+}}); after the conversion autocast is never enabled, so that code would take its other path: migrate this step by hand [amp-manual-migration]
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

void train_helper(HelperNet &model, torch::optim::SGD &opt, const torch::Tensor &x) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_cpu_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_cpu_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = model(x).sum();
    // CHECK-MESSAGES: :[[@LINE-1]]:12: warning: not migrated automatically: the model's forward asks whether autocast is on (`at::autocast::is_cpu_enabled()` at {{.*}}:{{[0-9]+}}); after the conversion autocast is never enabled, so that code would take its other path: migrate this step by hand [amp-manual-migration]
    at::autocast::set_cpu_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

// A model whose forward asks nothing: rewritten as usual.
struct PlainNetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x) { return x * 2; }
};
TORCH_MODULE(PlainNet);

void train_plain(PlainNet &model, torch::optim::SGD &opt, const torch::Tensor &x) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = model->forward(x).sum();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}void train_plain(PlainNet &model, torch::optim::SGD &opt, const torch::Tensor &x) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::GradScaler scaler;{{$}}
// CHECK-FIXES-NEXT: {{^}}  torch::Tensor loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}    loss = amp::cast_to_adapter_tensor(amp_model->forward(x)).sum();{{$}}
// CHECK-FIXES-NEXT: {{^}}    return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(opt));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(opt, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.update();{{$}}
// CHECK-FIXES-NEXT: {{^}}}{{$}}
