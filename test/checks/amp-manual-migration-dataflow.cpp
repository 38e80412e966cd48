// RUN: %check_amp %s %t.cpp
// Steps whose statements were carried into a program that computes something else (issue #37
// items 4, 8, 13, 14): two scopes feeding one loss, a head run in fp32 after the scope, parameters
// collected into a vector and handed to a collective, a scope in one branch of a run-time flag.
#include <torch/torch.h>
#include "scaler.h"
struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

// Two scopes feed one loss: the first one's forward would stay outside value_and_grad.
void two_scopes(Net &enc, Net &head, torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler,
                const torch::Tensor &data, const torch::Tensor &target) {
  for (int i = 0; i < 10; ++i) {
    optimizer.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() clears the .grad that this step's backward fills; keep it while the step is migrated by hand (see amp-manual-migration): with explicit gradients from amp::value_and_grad it is redundant [amp-zero-grad]
    torch::Tensor feat;
    {
      at::autocast::set_enabled(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
      // CHECK-MESSAGES: :[[@LINE-2]]:7: warning: not migrated automatically: this autocast scope computes values that the training step's loss reads (the step's own scope starts at {{.*}}.cpp:{{[0-9]+}}); the rewrite hands one scope's code to amp::value_and_grad, and this one would stay outside it, its gradient lost: join the two scopes into one, or migrate this step by hand [amp-manual-migration]
      feat = enc->forward(data);
      at::autocast::set_enabled(false);
    }
    torch::Tensor loss;
    {
      at::autocast::set_enabled(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
      loss = torch::nll_loss(head->forward(feat), target);
      at::autocast::set_enabled(false);
    }
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  }
}

// The scope in one branch, the fp32 forward in the other: the model is converted by the flag.
void use_amp_branch(Net &model, torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler,
                    const torch::Tensor &data, const torch::Tensor &target, bool use_amp) {
  for (int i = 0; i < 10; ++i) {
    optimizer.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
    torch::Tensor loss;
    if (use_amp) {
      at::autocast::set_enabled(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
      loss = torch::nll_loss(model->forward(data), target);
      at::autocast::set_enabled(false);
    } else {
      loss = torch::nll_loss(model->forward(data), target);
    }
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  }
}

// The parameters collected into a vector, then all-reduced between backward and step: the
// collective would act on .grad, where explicit grads never are.
void all_reduce(std::vector<torch::Tensor> &ts);
void collected_params(Net &model, torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler,
                      const torch::Tensor &data, const torch::Tensor &target) {
  std::vector<torch::Tensor> ps;
  for (auto &p : model->parameters())
    ps.push_back(p);
  for (int i = 0; i < 10; ++i) {
    optimizer.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() clears the .grad that this step's backward fills; keep it while the step is migrated by hand (see amp-manual-migration): with explicit gradients from amp::value_and_grad it is redundant [amp-zero-grad]
    torch::Tensor loss;
    {
      at::autocast::set_enabled(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
      loss = torch::nll_loss(model->forward(data), target);
      at::autocast::set_enabled(false);
    }
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    all_reduce(ps);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: not migrated automatically: `all_reduce(ps)` hands the parameters (or the model or optimizer) to code that may read or write .grad between the scaled backward and step(); the explicit grads of amp::value_and_grad never reach .grad: rewrite it onto the grads or migrate this step by hand [amp-manual-migration]
    scaler.step(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  }
}

// A head run in fp32 after the scope: only the scope's model is converted.
void fp32_head(Net &model, Net &head, torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler,
               const torch::Tensor &data, const torch::Tensor &target) {
  for (int i = 0; i < 10; ++i) {
    optimizer.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
    torch::Tensor feat;
    {
      at::autocast::set_enabled(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
      feat = model->forward(data);
      at::autocast::set_enabled(false);
    }
    auto loss = torch::nll_loss(head->forward(feat.to(torch::kFloat)), target);
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  }
}
// CHECK-FIXES: {{^}}  auto amp_model = amp::auto_mixed_precision(model, use_amp ? amp::Level::O2 : amp::Level::O0, torch::kCUDA);{{$}}
// CHECK-FIXES: {{^}}      if (use_amp) {{{$}}
// CHECK-FIXES-NEXT: {{^}}        loss = torch::nll_loss(amp::cast_to_adapter_tensor(amp_model->forward(data)), target);{{$}}
// CHECK-FIXES-NEXT: {{^}}      } else {{{$}}
// CHECK-FIXES-NEXT: {{^}}        loss = torch::nll_loss(model->forward(data), target);{{$}}
// CHECK-FIXES: {{^}}    all_reduce(ps);{{$}}
// CHECK-FIXES: {{^}}void fp32_head(
// CHECK-FIXES: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NOT: amp_head
// CHECK-FIXES: {{^}}      auto loss = torch::nll_loss(head->forward(feat.to(torch::kFloat)), target);{{$}}
