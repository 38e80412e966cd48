// REQUIRES: libtorch
// RUN: %check_amp_real %s %t.cpp --level=O1 -- -isystem %torch_include -I %amp_torch_include -I %amp_runtime_include
// WILD: bf16 CPU autocast without a loss scaler over real libtorch headers, where step() takes a
// defaulted closure: the scope, a plain loss.backward(), clip_grad_norm_, and optimizer.step() of
// an optimizer held by value and by std::shared_ptr become value_and_grad and amp::step.
#include <ATen/autocast_mode.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>
#include <memory>

float train_step(torch::nn::Linear &model, torch::optim::AdamW &optimizer, const torch::Tensor &x,
                 const torch::Tensor &y) {
  optimizer.zero_grad();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
  at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
  at::autocast::set_cpu_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_cpu_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto loss = torch::mse_loss(model(x), y);
  at::autocast::set_cpu_enabled(false);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: note: the scope ends here
  at::autocast::clear_cache();
  loss.backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: note: the loss computed in this scope is backpropagated here, with no loss scaler; the step becomes amp::value_and_grad and amp::step(optimizer, grads)
  torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: clipping the parameters' .grad in a step whose loss was computed under autocast; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
  optimizer.step();
  return loss.item<float>();
}
// CHECK-FIXES: {{^}}#include <amp/torch.h>{{$}}
// CHECK-FIXES: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1, at::kBFloat16);{{$}}
// CHECK-FIXES-NEXT: {{^}}  torch::Tensor loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}    loss = torch::mse_loss(amp::cast_to_adapter_tensor(amp_model(x)), y);{{$}}
// CHECK-FIXES-NEXT: {{^}}    return loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [loss_value, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::check_holds(optimizer, model->parameters());{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::clip_by_global_norm_(grads, 1.0);{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::step(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  return loss.item<float>();{{$}}

void shared_optimizer(torch::nn::Linear model, std::shared_ptr<torch::optim::AdamW> opt,
                      const torch::Tensor &x, const torch::Tensor &y) {
  torch::Tensor loss;
  {
    at::autocast::set_cpu_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_cpu_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = torch::mse_loss(model->forward(x), y);
    at::autocast::set_cpu_enabled(false);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: note: the scope ends here
  }
  loss.backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: note: the loss computed in this scope is backpropagated here, with no loss scaler; the step becomes amp::value_and_grad and amp::step(optimizer, grads)
  opt->step();
}
// CHECK-FIXES: {{^}}  torch::Tensor loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}    loss = torch::mse_loss(amp::cast_to_adapter_tensor(amp_model->forward(x)), y);{{$}}
// CHECK-FIXES-NEXT: {{^}}    return loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(opt));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [loss_value, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::step(opt, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}}{{$}}

// The loss divided in the backward call, `(loss / accum).backward()`, and a step every `accum`
// micro-batches: the function returns the divided loss, the micro-batch grads are summed.
void divided(torch::nn::Linear &model, torch::optim::AdamW &optimizer, const torch::Tensor &x,
             const torch::Tensor &y, int accum) {
  for (int i = 0; i < 12; ++i) {
    at::autocast::set_cpu_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_cpu_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss = torch::mse_loss(model(x), y);
    at::autocast::set_cpu_enabled(false);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: note: the scope ends here
    (loss / accum).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: note: the loss computed in this scope is backpropagated here, with no loss scaler; the step becomes amp::value_and_grad and amp::step(optimizer, grads)
    if ((i + 1) % accum == 0) {
      optimizer.step();
      optimizer.zero_grad();
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: zero_grad() {{.*}} [amp-zero-grad]
    }
  }
}
// CHECK-FIXES: {{^}}  std::vector<torch::Tensor> grads;{{$}}
// CHECK-FIXES-NEXT: {{^}}  for (int i = 0; i < 12; ++i) {{[{]}}{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto grad_fn = amp::value_and_grad([&] {{[{]}}{{$}}
// CHECK-FIXES-NEXT: {{^}}      auto loss = torch::mse_loss(amp::cast_to_adapter_tensor(amp_model(x)), y);{{$}}
// CHECK-FIXES-NEXT: {{^}}      return (loss / accum);{{$}}
// CHECK-FIXES-NEXT: {{^}}    }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto [loss_value, micro_grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}    amp::accumulate_grads(grads, micro_grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}    if ((i + 1) % accum == 0) {{[{]}}{{$}}
// CHECK-FIXES-NEXT: {{^}}      amp::step(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}      grads.clear();{{$}}
