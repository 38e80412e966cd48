// RUN: %check_amp %s %t.cpp
// WILD (issue #11 item 5, #12 item 7): training steps inside lambdas. A per-batch lambda, a
// generic one (`[&](auto &batch)`, read through its instantiation), a task handed to std::async
// with an explicit capture list, and a std::function: each is migrated like a function body. The
// model the lambda captures is converted once, outside it (before the outermost loop around the
// lambda that the model's declaration precedes), and the lambda captures the converted model by
// copy. A model that is the lambda's own parameter is converted where the step starts. A step
// split across the lambda's boundary, and a conditional step() that accumulated across calls,
// are reported.
#include <torch/torch.h>
#include "scaler.h"
#include <functional>
#include <future>
#include <vector>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

float per_batch(Net &model, torch::optim::SGD &optimizer, const std::vector<torch::Tensor> &batches) {
  torch::amp::GradScaler scaler;
  float total = 0;
  auto train_step = [&](const torch::Tensor &batch) {
    optimizer.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss = model->forward(batch).mean();
    at::autocast::set_enabled(false);
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.unscale_(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
    scaler.step(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
    return loss.item<float>();
  };
  for (const auto &b : batches)
    total += train_step(b);
  return total;
}

// CHECK-FIXES: {{^}}#include <amp/torch.h>{{$}}
// CHECK-FIXES: {{^}}float per_batch(Net &model, torch::optim::SGD &optimizer, const std::vector<torch::Tensor> &batches) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::GradScaler scaler;{{$}}
// CHECK-FIXES-NEXT: {{^}}  float total = 0;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto train_step = [&, amp_model](const torch::Tensor &batch) {{{$}}
// CHECK-FIXES-NEXT: {{^}}    torch::Tensor loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}      loss = amp::cast_to_adapter_tensor(amp_model->forward(batch)).mean();{{$}}
// CHECK-FIXES-NEXT: {{^}}      return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}    }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.unscale_(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}    amp::check_holds(optimizer, model->parameters());{{$}}
// CHECK-FIXES-NEXT: {{^}}    amp::clip_by_global_norm_(grads, 1.0);{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.step(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.update();{{$}}
// CHECK-FIXES-NEXT: {{^}}    return loss.item<float>();{{$}}
// CHECK-FIXES-NEXT: {{^}}  };{{$}}

void generic_per_epoch(torch::optim::SGD &optimizer, const std::vector<torch::Tensor> &batches) {
  Net model;
  torch::amp::GradScaler scaler;
  for (int epoch = 0; epoch < 3; ++epoch) {
    auto train_step = [&](auto &batch) {
      at::autocast::set_enabled(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
      auto out = model->forward(batch);
      auto loss = out.mean();
      at::autocast::set_enabled(false);
      scaler.scale(loss).backward();
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
      scaler.step(optimizer);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
      scaler.update();
      optimizer.zero_grad();
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
    };
    for (auto &b : batches)
      train_step(b);
  }
}

// CHECK-FIXES: {{^}}void generic_per_epoch(torch::optim::SGD &optimizer, const std::vector<torch::Tensor> &batches) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  Net model;{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::GradScaler scaler;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  for (int epoch = 0; epoch < 3; ++epoch) {{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto train_step = [&, amp_model](auto &batch) {{{$}}
// CHECK-FIXES-NEXT: {{^}}      auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}        auto out = amp::cast_to_adapter_tensor(amp_model->forward(batch));{{$}}
// CHECK-FIXES-NEXT: {{^}}        auto loss = out.mean();{{$}}
// CHECK-FIXES-NEXT: {{^}}        return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}      }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}      auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}      scaler.step(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}      scaler.update();{{$}}
// CHECK-FIXES-NEXT: {{^}}    };{{$}}

void on_a_thread(Net &model, torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler,
                 const torch::Tensor &batch) {
  auto task = std::async(std::launch::async, [&model, &optimizer, &scaler, batch] {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss = model->forward(batch).mean();
    at::autocast::set_enabled(false);
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  });
  task.get();
}

// CHECK-FIXES: {{^}}void on_a_thread(Net &model, torch::optim::SGD &optimizer, amp::GradScaler &scaler,{{$}}
// CHECK-FIXES-NEXT: {{^}}                 const torch::Tensor &batch) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto task = std::async(std::launch::async, [&model, &optimizer, &scaler, batch, amp_model] {{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}      auto loss = amp::cast_to_adapter_tensor(amp_model->forward(batch)).mean();{{$}}
// CHECK-FIXES-NEXT: {{^}}      return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}    }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.step(optimizer, grads);{{$}}

std::function<void(Net &, const torch::Tensor &)> model_parameter(torch::optim::SGD &optimizer,
                                                                  torch::amp::GradScaler &scaler) {
  return [&](Net &m, const torch::Tensor &batch) {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss = m->forward(batch).mean();
    at::autocast::set_enabled(false);
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  };
}

// CHECK-FIXES: {{^}}                                                                  amp::GradScaler &scaler) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  return [&](Net &m, const torch::Tensor &batch) {{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto amp_m = amp::auto_mixed_precision(m, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}      auto loss = amp::cast_to_adapter_tensor(amp_m->forward(batch)).mean();{{$}}

void step_outside(Net &model, torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler,
                  const torch::Tensor &batch) {
  auto forward_backward = [&] {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss = model->forward(batch).mean();
    at::autocast::set_enabled(false);
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  };
  forward_backward();
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: the step crosses a lambda boundary: the scaled backward (line [[#@LINE-5]]) runs in the lambda at line [[#@LINE-10]] and step() in 'step_outside' outside its lambdas; the grads of amp::value_and_grad live in one body: put the whole step in one lambda (or none) or migrate by hand [amp-manual-migration]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

// CHECK-FIXES: {{^}}void step_outside(Net &model, torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler,{{$}}
// CHECK-FIXES-NEXT: {{^}}                  const torch::Tensor &batch) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto forward_backward = [&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}    at::autocast::set_enabled(true);{{$}}

void accumulates_across_calls(Net &model, torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler,
                              const std::vector<torch::Tensor> &batches) {
  int seen = 0;
  auto micro_step = [&](const torch::Tensor &batch) {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss = model->forward(batch).mean();
    at::autocast::set_enabled(false);
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    if (++seen % 4 == 0) {
      scaler.step(optimizer);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: not migrated automatically: step() runs under a condition but the scaled backward on every call of this lambda, and no zero_grad() of the step runs on every call: .grad sums the gradients of the calls that skip it (a gradient accumulation across calls), which the explicit grads of one call cannot carry; clear the gradients on every call or migrate by hand [amp-manual-migration]
      // CHECK-MESSAGES: :[[@LINE-2]]:7: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
      scaler.update();
      optimizer.zero_grad();
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: zero_grad() clears the .grad that this step's backward fills; keep it while the step is migrated by hand (see amp-manual-migration): with explicit gradients from amp::value_and_grad it is redundant [amp-zero-grad]
    }
  };
  for (const auto &b : batches)
    micro_step(b);
}
// CHECK-FIXES: {{^}}  auto micro_step = [&](const torch::Tensor &batch) {{{$}}
// CHECK-FIXES-NEXT: {{^}}    at::autocast::set_enabled(true);{{$}}

// No scaler (bf16): scope, plain backward and the optimizer's step in one per-batch lambda.
void bf16_lambda(Net &model, torch::optim::SGD &opt, const std::vector<torch::Tensor> &batches,
                 const torch::Tensor &y) {
  auto step = [&](const torch::Tensor &x) {
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_cpu_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_cpu_enabled'{{.*}} [amp-autocast-scope]
    auto loss = torch::nll_loss(model->forward(x), y);
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
    opt.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant{{.*}} [amp-zero-grad]
    loss.backward();
    opt.step();
    return loss.item<float>();
  };
  for (const auto &b : batches)
    step(b);
}
// CHECK-FIXES: {{^}}void bf16_lambda(
// CHECK-FIXES: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, at::kBFloat16);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto step = [&, amp_model](const torch::Tensor &x) {{{$}}
// CHECK-FIXES-NEXT: {{^}}    torch::Tensor loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}      loss = torch::nll_loss(amp::cast_to_adapter_tensor(amp_model->forward(x)), y);{{$}}
// CHECK-FIXES-NEXT: {{^}}      return loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}    }, amp::parameters_of(opt));{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto [loss_value, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}    amp::step(opt, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}    return loss.item<float>();{{$}}
