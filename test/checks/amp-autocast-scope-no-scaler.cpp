// RUN: %check_amp %s %t.cpp
// amp-autocast-scope, steps without a loss scaler (bf16 autocast): the scope, a plain
// loss.backward() of the loss computed in it, clipping, and the optimizer's own step() become
// amp::value_and_grad, amp::clip_by_global_norm and amp::step(optimizer, grads). Nothing says
// "scaler" where there is none.
#include <torch/torch.h>
#include <memory>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

float bf16_pair(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
                const torch::Tensor &target) {
  optimizer.zero_grad();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
  at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
  at::autocast::set_cpu_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_cpu_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto output = model->forward(data);
  auto loss = torch::nll_loss(output, target);
  at::autocast::set_cpu_enabled(false);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: note: the scope ends here
  loss.backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: note: the loss computed in this scope is backpropagated here, with no loss scaler; the step becomes amp::value_and_grad and amp::step(optimizer, grads)
  torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: clipping the parameters' .grad in a step whose loss was computed under autocast; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
  optimizer.step();
  return loss.item<float>();
}
// CHECK-FIXES: {{^}}#include <amp/torch.h>{{$}}
// CHECK-FIXES: {{^}}                const torch::Tensor &target) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, at::kBFloat16);{{$}}
// CHECK-FIXES-NEXT: {{^}}  torch::Tensor loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto output = amp::cast_to_adapter_tensor(amp_model->forward(data));{{$}}
// CHECK-FIXES-NEXT: {{^}}    loss = torch::nll_loss(output, target);{{$}}
// CHECK-FIXES-NEXT: {{^}}    return loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [loss_value, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::check_holds(optimizer, model->parameters());{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::clip_by_global_norm_(grads, 1.0);{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::step(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  return loss.item<float>();{{$}}

class AutocastGuard {
public:
  AutocastGuard() { at::autocast::set_enabled(true); }
  ~AutocastGuard() { at::autocast::set_enabled(false); }
};

// A guard in a block, an optimizer held by std::shared_ptr (amp::step takes it as it is).
void guard_shared_optimizer(Net &model, std::shared_ptr<torch::optim::Adam> opt,
                            const torch::Tensor &data, const torch::Tensor &target) {
  torch::Tensor loss;
  {
    AutocastGuard guard;
    // CHECK-MESSAGES: :[[@LINE-1]]:19: warning: autocast scope opened by guard 'AutocastGuard'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = torch::nll_loss(model->forward(data), target);
  }
  loss.backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: note: the loss computed in this scope is backpropagated here, with no loss scaler; the step becomes amp::value_and_grad and amp::step(optimizer, grads)
  opt->step();
  opt->zero_grad();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
}
// CHECK-FIXES: {{^}}  torch::Tensor loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}    loss = torch::nll_loss(amp::cast_to_adapter_tensor(amp_model->forward(data)), target);{{$}}
// CHECK-FIXES-NEXT: {{^}}    return loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(opt));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [loss_value, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::step(opt, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}}{{$}}

// `.grad` touched between backward() and step() in a way that cannot be carried over (the loop uses
// the parameter itself): the step is reported, with the statement, and not rewritten (the same
// rule as a scaled step).
void grad_read(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
               const torch::Tensor &target) {
  at::autocast::set_cpu_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_cpu_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto loss = torch::nll_loss(model->forward(data), target);
  at::autocast::set_cpu_enabled(false);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: note: the scope ends here
  loss.backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: note: the loss computed in this scope is backpropagated here, with no loss scaler; the step becomes amp::value_and_grad and amp::step(optimizer, grads)
  for (auto &p : model->parameters())
    p.grad().mul_(p.size(0));
  // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: not migrated automatically: `for (auto &p : model->parameters()) ...` uses the parameter 'p' itself, not only its .grad, between the backward and step(); the explicit grads of amp::value_and_grad never reach .grad: rewrite it onto the grads or migrate this step by hand [amp-manual-migration]
  optimizer.step();
}
// CHECK-FIXES: {{^}}  at::autocast::set_cpu_enabled(true);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto loss = torch::nll_loss(model->forward(data), target);{{$}}
// CHECK-FIXES-NEXT: {{^}}  at::autocast::set_cpu_enabled(false);{{$}}
// CHECK-FIXES-NEXT: {{^}}  loss.backward();{{$}}
// CHECK-FIXES-NEXT: {{^}}  for (auto &p : model->parameters()){{$}}
// CHECK-FIXES-NEXT: {{^}}    p.grad().mul_(p.size(0));{{$}}
// CHECK-FIXES-NEXT: {{^}}  optimizer.step();{{$}}

// A scope and a backward but no optimizer step in the function: no step; reported without a
// word about scalers.
void no_optimizer_step(Net &model, const torch::Tensor &data, const torch::Tensor &target) {
  at::autocast::set_cpu_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_cpu_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto loss = torch::nll_loss(model->forward(data), target);
  at::autocast::set_cpu_enabled(false);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: note: the scope ends here
  // CHECK-MESSAGES: :[[@LINE-5]]:3: warning: not migrated automatically: backward() at line [[#@LINE+1]] follows this autocast scope, but no optimizer or scaler step() follows it in this function; when the step is in another function, move it into this one or migrate by hand [amp-manual-migration]
  loss.backward();
}

// fp32 training, no autocast anywhere: not AMP code, nothing to say.
void fp32_step(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
               const torch::Tensor &target) {
  auto loss = torch::nll_loss(model->forward(data), target);
  loss.backward();
  optimizer.step();
}

// The forward in the scope, the loss in fp32 after it from the scope's output (PyTorch's advice for
// sensitive losses): the loss statements go into the function with the forward.
void loss_after_scope(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
                      const torch::Tensor &target) {
  at::autocast::set_cpu_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_cpu_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto out = model->forward(data);
  at::autocast::set_cpu_enabled(false);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: note: the scope ends here
  auto logits = out.to(torch::kFloat);
  auto loss = torch::nll_loss(logits, target);
  loss.backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: note: the loss computed in this scope is backpropagated here{{.*}}
  optimizer.step();
}
// CHECK-FIXES: {{^}}void loss_after_scope(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,{{$}}
// CHECK-FIXES: {{^}}  auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto out = amp::cast_to_adapter_tensor(amp_model->forward(data));{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto logits = out.to(torch::kFloat);{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto loss = torch::nll_loss(logits, target);{{$}}
// CHECK-FIXES-NEXT: {{^}}    return loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [loss_value, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::step(optimizer, grads);{{$}}

// The same with the scope's output unused by the loss: an inference scope, then fp32 training.
void unrelated_scope(Net &model, Net &teacher, torch::optim::SGD &optimizer,
                     const torch::Tensor &data, const torch::Tensor &target) {
  at::autocast::set_cpu_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_cpu_enabled'{{.*}} [amp-autocast-scope]
  auto hint = teacher->forward(data);
  at::autocast::set_cpu_enabled(false);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: note: the scope ends here
  // CHECK-MESSAGES: :[[@LINE-5]]:3: warning: not migrated automatically: backward() at line [[#@LINE+3]] follows{{.*}} [amp-manual-migration]
  std::printf("%f\n", hint.sum().item<float>());
  auto loss = torch::nll_loss(model->forward(data), target);
  loss.backward();
  optimizer.step();
}
