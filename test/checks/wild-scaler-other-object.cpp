// RUN: %check_amp %s %t.cpp
// WILD: the scaler and the optimizer reached through another object's members (a training state
// passed by pointer, a config held by value): `state->scaler->scale(loss)`, `*state->opt`,
// `run.scaler.step(run.opt)`. The member is the scaler; its declaration's type changes, and so
// does every spelling of the type where the state is built.
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

struct TrainState {
  std::shared_ptr<torch::amp::GradScaler> scaler;
  std::shared_ptr<torch::optim::SGD> opt;
};

TrainState make_state(Net &model) {
  TrainState s;
  s.opt = std::make_shared<torch::optim::SGD>(model->parameters(), torch::optim::SGDOptions(0.1));
  s.scaler = std::make_shared<torch::amp::GradScaler>();
  return s;
}

void step_via_state(Net &model, TrainState *state, const torch::Tensor &x) {
  state->opt->zero_grad();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = model->forward(x).sum();
    at::autocast::set_enabled(false);
  }
  state->scaler->scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  state->scaler->unscale_(*state->opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
  torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
  state->scaler->step(*state->opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  state->scaler->update();
}

struct Run {
  torch::amp::GradScaler scaler;
  torch::optim::Adam opt;
};

void step_via_value(Net &model, Run &run, const torch::Tensor &x) {
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = model->forward(x).sum();
    at::autocast::set_enabled(false);
  }
  run.scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  run.scaler.step(run.opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  run.scaler.update();
}

// Two objects' scalers are two scalers: `a`'s scale() does not pair with `b`'s step() (a type of
// its own, so that the steps above are not held back by this one's shared scaler type).
struct Replica {
  torch::amp::GradScaler scaler;
  torch::optim::SGD opt;
};

void two_objects(Net &model, Replica &a, Replica &b, const torch::Tensor &x) {
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = model->forward(x).sum();
    at::autocast::set_enabled(false);
  }
  a.scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: the scaler's step() is not in this function; scaling and stepping in different functions cannot be rewritten together [amp-manual-migration]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  b.scaler.step(b.opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: no scaled backward (scaler.scale(loss).backward()) in this function; the scope, scaling and stepping are in different functions [amp-manual-migration]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  b.scaler.update();
}
// CHECK-FIXES: {{^}}struct TrainState {{{$}}
// CHECK-FIXES-NEXT: {{^}}  std::shared_ptr<amp::GradScaler> scaler;{{$}}
// CHECK-FIXES-NEXT: {{^}}  std::shared_ptr<torch::optim::SGD> opt;{{$}}
// CHECK-FIXES-NEXT: {{^}}};{{$}}
// CHECK-FIXES: {{^}}TrainState make_state(Net &model) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  TrainState s;{{$}}
// CHECK-FIXES-NEXT: {{^}}  s.opt = std::make_shared<torch::optim::SGD>(model->parameters(), torch::optim::SGDOptions(0.1));{{$}}
// CHECK-FIXES-NEXT: {{^}}  s.scaler = std::make_shared<amp::GradScaler>();{{$}}
// CHECK-FIXES-NEXT: {{^}}  return s;{{$}}
// CHECK-FIXES-NEXT: {{^}}}{{$}}
// CHECK-FIXES: {{^}}void step_via_state(Net &model, TrainState *state, const torch::Tensor &x) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  torch::Tensor loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}    loss = amp::cast_to_adapter_tensor(amp_model->forward(x)).sum();{{$}}
// CHECK-FIXES-NEXT: {{^}}    return state->scaler->scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(*state->opt));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  state->scaler->unscale_(*state->opt, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::check_holds(*state->opt, model->parameters());{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::clip_by_global_norm_(grads, 1.0);{{$}}
// CHECK-FIXES-NEXT: {{^}}  state->scaler->step(*state->opt, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  state->scaler->update();{{$}}
// CHECK-FIXES-NEXT: {{^}}}{{$}}
// CHECK-FIXES: {{^}}struct Run {{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::GradScaler scaler;{{$}}
// CHECK-FIXES-NEXT: {{^}}  torch::optim::Adam opt;{{$}}
// CHECK-FIXES-NEXT: {{^}}};{{$}}
// CHECK-FIXES: {{^}}void step_via_value(Net &model, Run &run, const torch::Tensor &x) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  torch::Tensor loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}    loss = amp::cast_to_adapter_tensor(amp_model->forward(x)).sum();{{$}}
// CHECK-FIXES-NEXT: {{^}}    return run.scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(run.opt));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  run.scaler.step(run.opt, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  run.scaler.update();{{$}}
// CHECK-FIXES-NEXT: {{^}}}{{$}}
