// RUN: %check_amp %s %t.cpp -- -I %S/Inputs
// The scaler held outside the step's function: a parameter by reference (its caller's local
// changes too, constructor arguments mapped), by pointer (the caller passes `&global`), a
// shared_ptr member made in the constructor, a std::optional member (emplace()'s arguments mapped
// like a constructor's), a function-local static pointer, a global. Every declaration the object flows through changes to amp::GradScaler; the
// user's class is left alone. A member declared in a header this run may not edit is reported.
#include <torch/torch.h>
#include "scaler.h"
#include "scaler_holder.h"
#include <memory>
#include <optional>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void by_reference(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler,
                  const torch::Tensor &x, const torch::Tensor &y) {
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = torch::nll_loss(model->forward(x), y);
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

void run_by_reference(Net &model, torch::optim::SGD &opt, const torch::Tensor &x, const torch::Tensor &y) {
  torch::amp::GradScaler scaler(1024.0, 2.0);
  for (int i = 0; i < 3; ++i)
    by_reference(model, opt, scaler, x, y);
  double s = scaler.get_scale();
  (void)s;
}

torch::amp::GradScaler global_scaler(512.0);

void by_pointer(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler *scaler,
                const torch::Tensor &x, const torch::Tensor &y) {
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = torch::nll_loss(model->forward(x), y);
    at::autocast::set_enabled(false);
  }
  scaler->scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler->step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler->update();
}

void run_by_pointer(Net &model, torch::optim::SGD &opt, const torch::Tensor &x, const torch::Tensor &y) {
  by_pointer(model, opt, &global_scaler, x, y);
}

class Trainer {
public:
  Trainer(Net model, torch::optim::SGD &opt)
      : model_(model), opt_(opt), scaler_(std::make_shared<torch::amp::GradScaler>(1024.0)) {
    maybe_.emplace(2048.0);
  }
  void step(const torch::Tensor &x, const torch::Tensor &y) {
    torch::Tensor loss;
    {
      at::autocast::set_enabled(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
      loss = torch::nll_loss(model_->forward(x), y);
      at::autocast::set_enabled(false);
    }
    scaler_->scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler_->step(opt_);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler_->update();
  }
  void step_optional(const torch::Tensor &x, const torch::Tensor &y) {
    torch::Tensor loss;
    {
      at::autocast::set_enabled(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
      loss = torch::nll_loss(model_->forward(x), y);
      at::autocast::set_enabled(false);
    }
    maybe_->scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    maybe_->step(opt_);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    if (maybe_)
      maybe_->update();
  }

private:
  Net model_;
  torch::optim::SGD &opt_;
  std::shared_ptr<torch::amp::GradScaler> scaler_;
  std::optional<torch::amp::GradScaler> maybe_;
};

void static_pointer(Net &model, torch::optim::SGD &opt, const torch::Tensor &x, const torch::Tensor &y) {
  static torch::amp::GradScaler *scaler = new torch::amp::GradScaler(1024.0);
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = torch::nll_loss(model->forward(x), y);
    at::autocast::set_enabled(false);
  }
  scaler->scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler->step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler->update();
}

void HeaderTrainer::step(torch::optim::SGD &opt, const torch::Tensor &x, const torch::Tensor &y) {
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = torch::nll_loss(model->forward(x), y);
    at::autocast::set_enabled(false);
  }
  scaler->scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler->step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: the declaration of the scaler 'scaler' at scaler_holder.h:15 must change to amp::GradScaler, but this run may not edit scaler_holder.h (not matched by --header-filter) [amp-manual-migration]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler->update();
}
// CHECK-FIXES: {{^}}#include <amp/torch.h>{{$}}
// CHECK-FIXES: {{^}}void by_reference(Net &model, torch::optim::SGD &opt, amp::GradScaler &scaler,{{$}}
// CHECK-FIXES: {{^}}  scaler.step(opt, grads);{{$}}
// CHECK-FIXES: {{^}}  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024.0).growth_factor(2.0));{{$}}
// CHECK-FIXES-NEXT: {{^}}  for (int i = 0; i < 3; ++i){{$}}
// CHECK-FIXES-NEXT: {{^}}    by_reference(model, opt, scaler, x, y);{{$}}
// CHECK-FIXES: {{^}}amp::GradScaler global_scaler(amp::GradScalerOptions().init_scale(512.0));{{$}}
// CHECK-FIXES: {{^}}void by_pointer(Net &model, torch::optim::SGD &opt, amp::GradScaler *scaler,{{$}}
// CHECK-FIXES: {{^}}  scaler->step(opt, grads);{{$}}
// CHECK-FIXES: {{^}}  by_pointer(model, opt, &global_scaler, x, y);{{$}}
// CHECK-FIXES: {{^}}      : model_(model), opt_(opt), scaler_(std::make_shared<amp::GradScaler>(amp::GradScalerOptions().init_scale(1024.0))) {{{$}}
// CHECK-FIXES-NEXT: {{^}}    maybe_.emplace(amp::GradScalerOptions().init_scale(2048.0));{{$}}
// CHECK-FIXES: {{^}}    scaler_->step(opt_, grads);{{$}}
// CHECK-FIXES: {{^}}    maybe_->step(opt_, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}    if (maybe_){{$}}
// CHECK-FIXES-NEXT: {{^}}      maybe_->update();{{$}}
// CHECK-FIXES: {{^}}  std::shared_ptr<amp::GradScaler> scaler_;{{$}}
// CHECK-FIXES-NEXT: {{^}}  std::optional<amp::GradScaler> maybe_;{{$}}
// CHECK-FIXES: {{^}}  static amp::GradScaler *scaler = new amp::GradScaler(amp::GradScalerOptions().init_scale(1024.0));{{$}}
// CHECK-FIXES: {{^}}  scaler->step(opt, grads);{{$}}
// The header's member could not change: HeaderTrainer::step keeps its implicit-grad form.
// CHECK-FIXES: {{^}}void HeaderTrainer::step(torch::optim::SGD &opt, const torch::Tensor &x, const torch::Tensor &y) {{{$}}
// CHECK-FIXES: {{^}}  scaler->scale(loss).backward();{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler->step(opt);{{$}}
