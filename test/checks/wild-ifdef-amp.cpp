// RUN: %check_amp %s %t.cpp
// WILD: `#ifdef USE_AMP` around the autocast calls only (the configuration parsed has it): the
// conditionals go with the scope, and the model is converted per configuration (`#ifdef USE_AMP`
// at the scope's level, `#else` at O0), so the fix compiles and keeps fp32 either way. A
// conditional that also holds other code is reported (the fix would compile in one configuration
// only). A step wholly inside a conditional, and a balanced conditional inside the forward
// region, are rewritten.
#include <torch/torch.h>
#include "scaler.h"
#include <cstdio>

#define USE_AMP 1
#define USE_CUDA 1

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void split_by_ifdef(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
                    const torch::Tensor &target) {
  torch::amp::GradScaler scaler;
#ifdef USE_AMP
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
#endif
  auto loss = torch::nll_loss(model->forward(data), target);
#ifdef USE_AMP
  at::autocast::set_enabled(false);
#endif
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

void ifdef_with_other_code(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
                           const torch::Tensor &target) {
  torch::amp::GradScaler scaler;
#if defined(USE_AMP)
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  std::printf("amp on\n");
#endif
  auto loss = torch::nll_loss(model->forward(data), target);
#if defined(USE_AMP)
  at::autocast::set_enabled(false);
#endif
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: the rewrite would replace code that holds the preprocessor directive `#endif` at line {{[0-9]+}}: part of this step is inside a preprocessor conditional and part outside it, so the rewritten step (one value_and_grad function over the forward, the model converted once) would compile in one configuration only; migrate by hand{{.*}} [amp-manual-migration]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

#ifdef USE_CUDA
void inside_one_conditional(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
                            const torch::Tensor &target) {
  torch::amp::GradScaler scaler;
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto output = model->forward(data);
#ifdef AMP_DEBUG
  std::cout << output.sizes() << std::endl;
#endif
  auto loss = torch::nll_loss(output, target);
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
#endif
// CHECK-FIXES: {{^}}#include <amp/torch.h>{{$}}
// CHECK-FIXES: {{^}}void split_by_ifdef(
// CHECK-FIXES: {{^}}  amp::GradScaler scaler;{{$}}
// CHECK-FIXES-NEXT: {{^}}#ifdef USE_AMP{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}#else{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O0, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}#endif{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {
// CHECK-FIXES-NEXT: {{^}}    auto loss = torch::nll_loss(amp::cast_to_adapter_tensor(amp_model->forward(data)), target);{{$}}
// CHECK-FIXES-NEXT: {{^}}    return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(optimizer, grads);{{$}}
// CHECK-FIXES: {{^}}void ifdef_with_other_code(
// CHECK-FIXES: {{^}}  at::autocast::set_enabled(true);{{$}}
// CHECK-FIXES: {{^}}  scaler.scale(loss).backward();{{$}}
// CHECK-FIXES: {{^}}  amp::GradScaler scaler;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {
// CHECK-FIXES: {{^}}    auto output = amp::cast_to_adapter_tensor(amp_model->forward(data));{{$}}
// CHECK-FIXES-NEXT: {{^}}  #ifdef AMP_DEBUG{{$}}
// CHECK-FIXES-NEXT: {{^}}    std::cout << output.sizes() << std::endl;{{$}}
// CHECK-FIXES-NEXT: {{^}}  #endif{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto loss = torch::nll_loss(output, target);{{$}}
// CHECK-FIXES-NEXT: {{^}}    return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(optimizer, grads);{{$}}
