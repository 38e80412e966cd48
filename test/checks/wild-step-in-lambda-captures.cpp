// RUN: %check_amp %s %t.cpp
// WILD (issue #12 item 7): the captures that carry the converted model into a step's lambda. Nested
// lambdas (an epoch lambda holding the per-batch one) each capture it by copy, the model converted
// once before the outermost; a `[=]` lambda copies it implicitly (the converted model's forward is
// const, so its by-copy capture can call it).
#include <torch/torch.h>
#include "scaler.h"
#include <vector>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void nested(Net &model, torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler,
            const std::vector<torch::Tensor> &batches) {
  auto run_epoch = [&]() {
    auto step = [&](const torch::Tensor &batch) {
      at::autocast::set_enabled(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
      auto loss = model->forward(batch).mean();
      at::autocast::set_enabled(false);
      scaler.scale(loss).backward();
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
      scaler.step(optimizer);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
      scaler.update();
    };
    for (const auto &b : batches)
      step(b);
  };
  for (int e = 0; e < 2; ++e)
    run_epoch();
}

// CHECK-FIXES: {{^}}void nested(Net &model, torch::optim::SGD &optimizer, amp::GradScaler &scaler,{{$}}
// CHECK-FIXES-NEXT: {{^}}            const std::vector<torch::Tensor> &batches) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto run_epoch = [&, amp_model]() {{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto step = [&, amp_model](const torch::Tensor &batch) {{{$}}
// CHECK-FIXES-NEXT: {{^}}      auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}        auto loss = amp::cast_to_adapter_tensor(amp_model->forward(batch)).mean();{{$}}

void by_copy(Net model, torch::optim::SGD *opt, torch::amp::GradScaler *scaler, const torch::Tensor &batch) {
  auto step = [=]() {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss = model->forward(batch).mean();
    at::autocast::set_enabled(false);
    scaler->scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler->step(*opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler->update();
  };
  step();
}

// CHECK-FIXES: {{^}}void by_copy(Net model, torch::optim::SGD *opt, amp::GradScaler *scaler, const torch::Tensor &batch) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto step = [=]() {{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}      auto loss = amp::cast_to_adapter_tensor(amp_model->forward(batch)).mean();{{$}}
// CHECK-FIXES-NEXT: {{^}}      return scaler->scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}    }, amp::parameters_of(*opt));{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler->step(*opt, grads);{{$}}
