// REQUIRES: libtorch
// RUN: %check_amp_real %s %t.cpp -- -isystem %torch_include -I %S/Inputs
// WILD: the scaler held every way real trainers hold it (value, reference, raw pointer,
// shared_ptr and unique_ptr members, std::optional, a function-local static pointer, a global)
// and the optimizer passed as `opt`, `*opt` and through `opt_ptr->`, over real libtorch headers.
// Each step is found: its scaled backward and its step() without explicit gradients. With no
// autocast scope and the model's forward defined in another file, each is refused for that (an
// fp32 forward is rewritten only where the forward's code is seen: wild-fp32-forward-scaler.cpp).
#include <ATen/autocast_mode.h>
#include <torch/nn/module.h>
#include <torch/optim/sgd.h>
#include <memory>
#include <optional>
#include "template_scaler.h"

struct Net : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};

port::GradScaler global_scaler;

void by_value(Net &model, torch::optim::SGD &opt, const torch::Tensor &x) {
  port::GradScaler scaler;
  torch::Tensor loss = model.forward(x).mean();
  // CHECK-MESSAGES: :[[@LINE-1]]:24: warning: not migrated automatically: no autocast scope precedes this scaled backward in this function, so its forward would be handed to amp::value_and_grad in fp32 (O0); but `model.forward(x)` (line [[@LINE-1]]) runs 'Net::forward', whose body is in no file of this run or of its compilation database: it may turn autocast on itself, so the forward's precision is not known; migrate this step by hand [amp-manual-migration]
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

void by_pointer(Net &model, std::shared_ptr<torch::optim::SGD> opt, port::GradScaler *scaler,
                const torch::Tensor &x) {
  torch::Tensor loss = model.forward(x).mean();
  // CHECK-MESSAGES: :[[@LINE-1]]:24: warning: not migrated automatically: no autocast scope precedes this scaled backward in this function, so its forward would be handed to amp::value_and_grad in fp32 (O0); but `model.forward(x)` (line [[@LINE-1]]) runs 'Net::forward', whose body is in no file of this run or of its compilation database: it may turn autocast on itself, so the forward's precision is not known; migrate this step by hand [amp-manual-migration]
  scaler->scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler->step(*opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler->update();
  opt->zero_grad();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: zero_grad() clears the .grad that this step's backward fills; keep it while the step is migrated by hand (see amp-manual-migration): with explicit gradients from amp::value_and_grad it is redundant [amp-zero-grad]
}

void optional_scaler(Net &model, torch::optim::SGD *opt_ptr, bool use_amp, const torch::Tensor &x) {
  std::optional<port::GradScaler> scaler;
  if (use_amp)
    scaler.emplace(1024.0);
  torch::Tensor loss = model.forward(x).mean();
  if (scaler) {
    scaler->scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: not migrated automatically: no autocast scope precedes this scaled backward in this function, and no statement before it in its block computes the loss `loss` (it is computed outside this block), so the forward pass to hand to amp::value_and_grad is unknown: compute the loss in the backward's block, or migrate this step by hand [amp-manual-migration]
    // CHECK-MESSAGES: :[[@LINE-2]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler->step(*opt_ptr);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler->update();
  }
  opt_ptr->zero_grad();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: zero_grad() clears the .grad that this step's backward fills; keep it while the step is migrated by hand (see amp-manual-migration): with explicit gradients from amp::value_and_grad it is redundant [amp-zero-grad]
}

void static_pointer(Net &model, torch::optim::SGD &opt, const torch::Tensor &x) {
  static port::GradScaler *scaler = new port::GradScaler(1024.0);
  torch::Tensor loss = model.forward(x).mean();
  // CHECK-MESSAGES: :[[@LINE-1]]:24: warning: not migrated automatically: no autocast scope precedes this scaled backward in this function, so its forward would be handed to amp::value_and_grad in fp32 (O0); but `model.forward(x)` (line [[@LINE-1]]) runs 'Net::forward', whose body is in no file of this run or of its compilation database: it may turn autocast on itself, so the forward's precision is not known; migrate this step by hand [amp-manual-migration]
  scaler->scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler->step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler->update();
}

void global(Net &model, torch::optim::SGD &opt, const torch::Tensor &x) {
  torch::Tensor loss = model.forward(x).mean();
  // CHECK-MESSAGES: :[[@LINE-1]]:24: warning: not migrated automatically: no autocast scope precedes this scaled backward in this function, so its forward would be handed to amp::value_and_grad in fp32 (O0); but `model.forward(x)` (line [[@LINE-1]]) runs 'Net::forward', whose body is in no file of this run or of its compilation database: it may turn autocast on itself, so the forward's precision is not known; migrate this step by hand [amp-manual-migration]
  global_scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  global_scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  global_scaler.update();
}

struct Trainer {
  std::shared_ptr<Net> model;
  std::shared_ptr<torch::optim::SGD> optimizer;
  std::shared_ptr<port::GradScaler> shared_scaler;
  std::unique_ptr<port::GradScaler> unique_scaler;

  void shared_member(const torch::Tensor &x) {
    torch::Tensor loss = model->forward(x).mean();
    // CHECK-MESSAGES: :[[@LINE-1]]:26: warning: not migrated automatically: no autocast scope precedes this scaled backward in this function, so its forward would be handed to amp::value_and_grad in fp32 (O0); but `model->forward(x)` (line [[@LINE-1]]) runs 'Net::forward', whose body is in no file of this run or of its compilation database: it may turn autocast on itself, so the forward's precision is not known; migrate this step by hand [amp-manual-migration]
    shared_scaler->scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    shared_scaler->step(*optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    shared_scaler->update();
  }
  void unique_member(const torch::Tensor &x) {
    torch::Tensor loss = model->forward(x).mean();
    // CHECK-MESSAGES: :[[@LINE-1]]:26: warning: not migrated automatically: no autocast scope precedes this scaled backward in this function, so its forward would be handed to amp::value_and_grad in fp32 (O0); but `model->forward(x)` (line [[@LINE-1]]) runs 'Net::forward', whose body is in no file of this run or of its compilation database: it may turn autocast on itself, so the forward's precision is not known; migrate this step by hand [amp-manual-migration]
    unique_scaler->scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    unique_scaler->step(*optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    unique_scaler->update();
  }
};
