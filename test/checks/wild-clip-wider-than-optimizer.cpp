// RUN: %check_amp %s %t.cpp
// WILD: a clip of the model's parameters where the optimizer holds part of the model (fine-tuning
// a head). The explicit grads are the optimizer's parameters', so clipping them would leave the
// rest of the model's gradients out of the norm: reported where the optimizer's construction is in
// sight and names another object's parameters; rewritten where it names the same model's, or a
// constructor's parameter (which may be the model itself).
#include <torch/torch.h>
#include "scaler.h"
#include <memory>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
  torch::nn::Linear backbone{nullptr}, head{nullptr};
};
TORCH_MODULE(Net);

void head_only(Net &model, const torch::Tensor &x, const torch::Tensor &y) {
  torch::optim::SGD optimizer(model->head->parameters(), torch::optim::SGDOptions(0.1));
  torch::amp::GradScaler scaler;
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto loss = torch::nll_loss(model->forward(x), y);
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.unscale_(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
  torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
  // CHECK-MESSAGES: :[[@LINE-2]]:37: warning: not migrated automatically: the clip covers `model->parameters()`, but the optimizer `optimizer` holds `model->head->parameters()` ({{[^)]+}}): the explicit grads are the optimizer's parameters', so the migrated clip would leave the other parameters' gradients out of the norm that clip_grad_norm_ counts them in (still scaled: unscale_ only unscales the optimizer's); clip the optimizer's parameters if that is what is meant, or migrate this step by hand [amp-manual-migration]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

void head_only_shared(Net &model, const torch::Tensor &x, const torch::Tensor &y) {
  auto optimizer = std::make_shared<torch::optim::Adam>(model->head->parameters());
  std::vector<torch::Tensor> params = model->parameters();
  torch::amp::GradScaler scaler;
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto loss = torch::nll_loss(model->forward(x), y);
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.unscale_(*optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
  double norm = torch::nn::utils::clip_grad_norm_(params, 1.0);
  // CHECK-MESSAGES: :[[@LINE-1]]:17: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
  // CHECK-MESSAGES: :[[@LINE-2]]:51: warning: not migrated automatically: the clip covers `params`, but the optimizer `*optimizer` holds `model->head->parameters()` ({{[^)]+}}): the explicit grads are the optimizer's parameters', so the migrated clip would leave the other parameters' gradients out of the norm that clip_grad_norm_ counts them in (still scaled: unscale_ only unscales the optimizer's); clip the optimizer's parameters if that is what is meant, or migrate this step by hand [amp-manual-migration]
  scaler.step(*optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

void whole_model(Net &model, const torch::Tensor &x, const torch::Tensor &y) {
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
  torch::amp::GradScaler scaler;
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto loss = torch::nll_loss(model->forward(x), y);
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.unscale_(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
  torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

class FromParameter {
public:
  FromParameter(Net m) : model_(m), opt_(m->parameters(), torch::optim::SGDOptions(0.1)) {}
  void step(const torch::Tensor &x, const torch::Tensor &y) {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss = torch::nll_loss(model_->forward(x), y);
    at::autocast::set_enabled(false);
    scaler_.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler_.unscale_(opt_);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
    torch::nn::utils::clip_grad_norm_(model_->parameters(), 1.0);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
    scaler_.step(opt_);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler_.update();
  }
private:
  Net model_;
  torch::optim::SGD opt_;
  torch::amp::GradScaler scaler_;
};

class HeadInBody {
public:
  explicit HeadInBody(Net m) : model_(m) {
    opt_ = std::make_unique<torch::optim::SGD>(model_->head->parameters(), torch::optim::SGDOptions(0.1));
  }
  void step(const torch::Tensor &x, const torch::Tensor &y) {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss = torch::nll_loss(model_->forward(x), y);
    at::autocast::set_enabled(false);
    scaler_.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler_.unscale_(*opt_);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
    torch::nn::utils::clip_grad_norm_(model_->parameters(), 1.0);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
    // CHECK-MESSAGES: :[[@LINE-2]]:39: warning: not migrated automatically: the clip covers `model_->parameters()`, but the optimizer `*opt_` holds `model_->head->parameters()` ({{[^)]+}}): the explicit grads are the optimizer's parameters', so the migrated clip would leave the other parameters' gradients out of the norm that clip_grad_norm_ counts them in (still scaled: unscale_ only unscales the optimizer's); clip the optimizer's parameters if that is what is meant, or migrate this step by hand [amp-manual-migration]
    scaler_.step(*opt_);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler_.update();
  }
private:
  Net model_;
  std::unique_ptr<torch::optim::SGD> opt_;
  torch::amp::GradScaler scaler_;
};

// CHECK-FIXES: {{^}}void whole_model(Net &model, const torch::Tensor &x, const torch::Tensor &y) {{{$}}
// CHECK-FIXES: {{^}}  amp::clip_by_global_norm_(grads, 1.0);{{$}}
// CHECK-FIXES: {{^}}class FromParameter {{{$}}
// CHECK-FIXES: {{^}}    amp::clip_by_global_norm_(grads, 1.0);{{$}}
// CHECK-FIXES: {{^}}class HeadInBody {{{$}}
// CHECK-FIXES: {{^}}    scaler_.scale(loss).backward();{{$}}
// CHECK-FIXES: {{^}}    torch::nn::utils::clip_grad_norm_(model_->parameters(), 1.0);{{$}}