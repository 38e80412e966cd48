// RUN: %check_amp %s %t.cpp
// WILD (issue #11 item 5, #12 item 6): a trainer whose step is split over two methods: the scope
// and the scaled backward in forward_backward(), unscale_/clip/step/update on the same member
// scaler in optimizer_step(), both called from train_batch(). The halves are paired, and each is
// reported naming both methods; nothing is edited (the grads would have to travel as a member).
// A method that scales and one that steps another scaler are not paired.
#include <torch/torch.h>
#include "scaler.h"
#include <memory>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

class Trainer {
public:
  void train_batch(const torch::Tensor &x);

private:
  void forward_backward(const torch::Tensor &x);
  void optimizer_step();
  Net model_;
  std::unique_ptr<torch::optim::SGD> opt_;
  torch::amp::GradScaler scaler_;
  float last_loss_ = 0;
};

void Trainer::forward_backward(const torch::Tensor &x) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto loss = model_->forward(x).mean();
  at::autocast::set_enabled(false);
  scaler_.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: the step is split over two methods of 'Trainer': its unscale_()/step()/update() are in 'optimizer_step' (line [[#@LINE+10]]), both called from 'train_batch'; the grads of amp::value_and_grad would have to travel from 'forward_backward' to 'optimizer_step' as a member of the class, which is not rewritten automatically: move both halves into one method or migrate by hand [amp-manual-migration]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  last_loss_ = loss.item<float>();
}

void Trainer::optimizer_step() {
  scaler_.unscale_(*opt_);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
  torch::nn::utils::clip_grad_norm_(model_->parameters(), 1.0);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: grads = amp::clip_by_global_norm(grads, max_norm) [amp-clip-grad-norm]
  scaler_.step(*opt_);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: the step is split over two methods of 'Trainer': its scaled backward is in 'forward_backward' (line [[#@LINE-12]]), both called from 'train_batch'; the grads of amp::value_and_grad would have to travel from 'forward_backward' to 'optimizer_step' as a member of the class, which is not rewritten automatically: move both halves into one method or migrate by hand [amp-manual-migration]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler_.update();
  opt_->zero_grad();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
}

void Trainer::train_batch(const torch::Tensor &x) {
  forward_backward(x);
  optimizer_step();
}

class TwoScalers {
public:
  void scaled(const torch::Tensor &x) {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss = model_->forward(x).mean();
    at::autocast::set_enabled(false);
    a_.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: not migrated automatically: the scaler's step() is not in this function; scaling and stepping in different functions cannot be rewritten together [amp-manual-migration]
    // CHECK-MESSAGES: :[[@LINE-2]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  }
  void stepped() {
    b_.step(opt_);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: not migrated automatically: no scaled backward (scaler.scale(loss).backward()) in this function; the scope, scaling and stepping are in different functions [amp-manual-migration]
    // CHECK-MESSAGES: :[[@LINE-2]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    b_.update();
  }

private:
  Net model_;
  torch::optim::SGD opt_;
  torch::amp::GradScaler a_, b_;
};
