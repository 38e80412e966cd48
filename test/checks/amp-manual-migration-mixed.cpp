// RUN: %check_amp %s %t.cpp
// Mixed steps (a scaled path beside a plain one) that are reported, not rewritten: the condition
// choosing the path is evaluated once more in the function given to value_and_grad, so it must
// only read and keep its value through the forward region; all the ifs must choose alike; each
// backward must come first in its branch; the plain path must step.
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);
bool amp_wanted(int step);

void side_effects(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler,
                  const torch::Tensor &x, int &amp_steps) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE+3]]:3: note: the scope ends here
  // CHECK-MESSAGES: :[[@LINE+11]]:5: note: the plain path (no scaler) backpropagates the loss computed in this scope here; it takes the grads of amp::value_and_grad too, and its step becomes amp::step(optimizer, grads)
  auto loss = model->forward(x).sum();
  at::autocast::set_enabled(false);
  if (amp_steps-- > 0) {
  // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: not migrated automatically: the scaled and the plain path are chosen by `amp_steps-- > 0`, which has side effects; it would be evaluated again to choose what amp::value_and_grad differentiates: store it in a variable first or migrate by hand [amp-manual-migration]
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  } else {
    loss.backward();
    opt.step();
  }
}

void not_a_read(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler,
                const torch::Tensor &x, int step) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE+3]]:3: note: the scope ends here
  // CHECK-MESSAGES: :[[@LINE+11]]:5: note: the plain path (no scaler) backpropagates the loss computed in this scope here; it takes the grads of amp::value_and_grad too, and its step becomes amp::step(optimizer, grads)
  auto loss = model->forward(x).sum();
  at::autocast::set_enabled(false);
  if (amp_wanted(step)) {
  // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: not migrated automatically: the scaled and the plain path are chosen by `amp_wanted(step)`, which is not a variable, a member, a pointer or optional test or a const method call; it would be evaluated again to choose what amp::value_and_grad differentiates: store it in a variable first or migrate by hand [amp-manual-migration]
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  } else {
    loss.backward();
    opt.step();
  }
}

void different_conditions(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler,
                          const torch::Tensor &x, bool use_amp) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE+3]]:3: note: the scope ends here
  // CHECK-MESSAGES: :[[@LINE+7]]:5: note: the plain path (no scaler) backpropagates the loss computed in this scope here; it takes the grads of amp::value_and_grad too, and its step becomes amp::step(optimizer, grads)
  auto loss = model->forward(x).sum();
  at::autocast::set_enabled(false);
  if (use_amp)
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  else
    loss.backward();
  if (scaler.is_enabled()) {
  // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: not migrated automatically: the scaled and the plain path are chosen by `use_amp` at {{.*}}.cpp:[[#@LINE-6]] and by `scaler.is_enabled()` here; the paths may not pair up: choose both by one condition or migrate by hand [amp-manual-migration]
    scaler.step(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  } else {
    opt.step();
  }
}

void changed_in_region(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler,
                       const torch::Tensor &x, bool use_amp) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE+5]]:3: note: the scope ends here
  // CHECK-MESSAGES: :[[@LINE+12]]:5: note: the plain path (no scaler) backpropagates the loss computed in this scope here; it takes the grads of amp::value_and_grad too, and its step becomes amp::step(optimizer, grads)
  auto loss = model->forward(x).sum();
  use_amp = use_amp && loss.defined();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: the scaled and the plain path are chosen by `use_amp`, which the forward region changes here; it would be evaluated again to choose what amp::value_and_grad differentiates: migrate by hand [amp-manual-migration]
  at::autocast::set_enabled(false);
  if (use_amp) {
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  } else {
    loss.backward();
    opt.step();
  }
}

void backward_not_first(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler,
                        const torch::Tensor &x, bool use_amp) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE+3]]:3: note: the scope ends here
  // CHECK-MESSAGES: :[[@LINE+11]]:5: note: the plain path (no scaler) backpropagates the loss computed in this scope here; it takes the grads of amp::value_and_grad too, and its step becomes amp::step(optimizer, grads)
  auto loss = model->forward(x).sum();
  at::autocast::set_enabled(false);
  if (use_amp) {
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  } else {
    loss = loss * 0.5;
    loss.backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: not migrated automatically: backward() is not the first statement of its branch of the if on `use_amp`; what the function given to amp::value_and_grad returns must be the loss as backward() saw it: migrate by hand [amp-manual-migration]
    opt.step();
  }
}

void plain_path_without_step(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler,
                             const torch::Tensor &x, bool use_amp) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE+3]]:3: note: the scope ends here
  // CHECK-MESSAGES: :[[@LINE+10]]:5: note: the plain path (no scaler) backpropagates the loss computed in this scope here; it takes the grads of amp::value_and_grad too
  auto loss = model->forward(x).sum();
  at::autocast::set_enabled(false);
  if (use_amp) {
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  } else {
    loss.backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: not migrated automatically: the plain path (no scaler) chosen by `use_amp` has no step() of the optimizer in this function; its gradients would be lost: migrate by hand [amp-manual-migration]
  }
}

// Nothing is edited: every step keeps its scaler type, its scope and both backwards.
// CHECK-FIXES-NOT: amp::
// CHECK-FIXES: {{^}}void side_effects(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler,{{$}}
// CHECK-FIXES: {{^}}  if (amp_steps-- > 0) {{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.scale(loss).backward();{{$}}
// CHECK-FIXES: {{^}}void plain_path_without_step(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler,{{$}}
// CHECK-FIXES-NEXT: {{^}}                             const torch::Tensor &x, bool use_amp) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  at::autocast::set_enabled(true);{{$}}
