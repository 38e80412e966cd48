// RUN: %check_amp %s %t.cpp
// WILD: a model assigned anew in the loop around the step (k-fold training: `model = Net();` at
// the top of each fold, or the next round's model at the bottom). The conversion goes inside that
// loop, after the assignment: converted once before it, the later folds would train the first
// model (issue #37 item 3). e2e: model_per_fold.
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void folds(int k, int epochs, const torch::Tensor &data, const torch::Tensor &target) {
  Net model;
  torch::amp::GradScaler scaler;
  for (int fold = 0; fold < k; ++fold) {
    model = Net();
    torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01));
    for (int epoch = 0; epoch < epochs; ++epoch) {
      optimizer.zero_grad();
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
      torch::Tensor loss;
      {
        at::autocast::set_enabled(true);
        // CHECK-MESSAGES: :[[@LINE-1]]:9: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
        loss = torch::nll_loss(model->forward(data), target);
        at::autocast::set_enabled(false);
      }
      scaler.scale(loss).backward();
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
      scaler.step(optimizer);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
      scaler.update();
    }
  }
}
// CHECK-FIXES: {{^}}  for (int fold = 0; fold < k; ++fold) {{{$}}
// CHECK-FIXES-NEXT: {{^}}    model = Net();{{$}}
// CHECK-FIXES-NEXT: {{^}}    torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01));{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}    for (int epoch = 0; epoch < epochs; ++epoch) {{{$}}

void rounds(Net &model, torch::optim::SGD &optimizer, int n, const torch::Tensor &data,
            const torch::Tensor &target) {
  torch::amp::GradScaler scaler;
  for (int round = 0; round < n; ++round) {
    for (int epoch = 0; epoch < 3; ++epoch) {
      optimizer.zero_grad();
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
      torch::Tensor loss;
      {
        at::autocast::set_enabled(true);
        // CHECK-MESSAGES: :[[@LINE-1]]:9: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
        loss = torch::nll_loss(model->forward(data), target);
        at::autocast::set_enabled(false);
      }
      scaler.scale(loss).backward();
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
      scaler.step(optimizer);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
      scaler.update();
    }
    model = Net();
  }
}
// CHECK-FIXES: {{^}}  for (int round = 0; round < n; ++round) {{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}    for (int epoch = 0; epoch < 3; ++epoch) {{{$}}
