// RUN: %check_amp %s %t.cpp
// WILD (issue #11 item 5, #12 item 6): a trainer whose step is split over two methods: the scope
// and the scaled backward in forward_backward(), unscale_/clip/step/update/zero_grad on the same
// member scaler in optimizer_step(), both called from train_batch(). The halves are paired and
// migrated as one fix: the grads travel in a new member `grads_` (declared after the scaler),
// summed like .grad (amp::accumulate_grads) and cleared where zero_grad() was. A class where a
// third method clears .grad too is reported at both halves, naming both methods; a method that
// scales and one that steps another scaler are not paired.
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
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  last_loss_ = loss.item<float>();
}

void Trainer::optimizer_step() {
  scaler_.unscale_(*opt_);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
  torch::nn::utils::clip_grad_norm_(model_->parameters(), 1.0);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
  scaler_.step(*opt_);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler_.update();
  opt_->zero_grad();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: zero_grad() ends a gradient accumulation: with explicit gradients it clears the summed grads list instead (grads.clear()) [amp-zero-grad]
}

// CHECK-FIXES: {{^}}#include <amp/torch.h>{{$}}
// CHECK-FIXES: {{^}}  amp::GradScaler scaler_;{{$}}
// CHECK-FIXES-NEXT: {{^}}  std::vector<torch::Tensor> grads_; // the grads from forward_backward() to optimizer_step(){{$}}
// CHECK-FIXES-NEXT: {{^}}  float last_loss_ = 0;{{$}}
// CHECK-FIXES-NEXT: {{^}}};{{$}}
// CHECK-FIXES: {{^}}void Trainer::forward_backward(const torch::Tensor &x) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model_, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  torch::Tensor loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}    loss = amp::cast_to_adapter_tensor(amp_model->forward(x)).mean();{{$}}
// CHECK-FIXES-NEXT: {{^}}    return scaler_.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(*opt_));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, micro_grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::accumulate_grads(grads_, micro_grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  last_loss_ = loss.item<float>();{{$}}
// CHECK-FIXES-NEXT: {{^}}}{{$}}
// CHECK-FIXES-EMPTY:
// CHECK-FIXES-NEXT: {{^}}void Trainer::optimizer_step() {{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler_.unscale_(*opt_, grads_);{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::check_holds(*opt_, model_->parameters());{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::clip_by_global_norm_(grads_, 1.0);{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler_.step(*opt_, grads_);{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler_.update();{{$}}
// CHECK-FIXES-NEXT: {{^}}  grads_.clear();{{$}}
// CHECK-FIXES-NEXT: {{^}}}{{$}}

void Trainer::train_batch(const torch::Tensor &x) {
  forward_backward(x);
  optimizer_step();
}

class ClearsElsewhere {
public:
  void reset() { opt_.zero_grad(); }
  void train_batch(const torch::Tensor &x) {
    scaled(x);
    stepped();
  }

private:
  void scaled(const torch::Tensor &x) {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss = model_->forward(x).mean();
    at::autocast::set_enabled(false);
    scaler_.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: not migrated automatically: the step is split over two methods of 'ClearsElsewhere': its unscale_()/step()/update() are in 'stepped' (line [[#@LINE+4]]), both called from 'train_batch'; its grads would travel from 'scaled' to 'stepped' in a new member of the class, but `opt_.zero_grad()` in 'reset' ({{.*}}:[[#@LINE-13]]) clears or touches .grad outside the two methods, which the member would not follow: move both halves into one method or migrate by hand [amp-manual-migration]
    // CHECK-MESSAGES: :[[@LINE-2]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  }
  void stepped() {
    scaler_.step(opt_);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: not migrated automatically: the step is split over two methods of 'ClearsElsewhere': its scaled backward is in 'scaled' (line [[#@LINE-6]]), both called from 'train_batch'; its grads would travel from 'scaled' to 'stepped' in a new member of the class, but `opt_.zero_grad()` in 'reset' ({{.*}}:[[#@LINE-18]]) clears or touches .grad outside the two methods, which the member would not follow: move both halves into one method or migrate by hand [amp-manual-migration]
    // CHECK-MESSAGES: :[[@LINE-2]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler_.update();
  }
  Net model_;
  torch::optim::SGD opt_;
  torch::amp::GradScaler scaler_;
};

// The method calling both halves clears .grad first: that zero_grad() clears the member.
class ClearsInCaller {
public:
  void train_batch(const torch::Tensor &x) {
    opt_.zero_grad();
    scaled(x);
    stepped();
  }

private:
  void scaled(const torch::Tensor &x) {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss = model_->forward(x).mean();
    at::autocast::set_enabled(false);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: note: the scope ends here, without at::autocast::clear_cache(){{.*}}
    scaler_.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  }
  void stepped() {
    scaler_.step(opt_);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler_.update();
  }
  Net model_;
  torch::optim::SGD opt_;
  torch::amp::GradScaler scaler_;
};

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

// CHECK-FIXES: {{^}}class ClearsElsewhere {{{$}}
// CHECK-FIXES-NEXT: {{^}}public:{{$}}
// CHECK-FIXES-NEXT: {{^}}  void reset() { opt_.zero_grad(); }{{$}}
// CHECK-FIXES: {{^}}class ClearsInCaller {{{$}}
// CHECK-FIXES-NEXT: {{^}}public:{{$}}
// CHECK-FIXES-NEXT: {{^}}  void train_batch(const torch::Tensor &x) {{{$}}
// CHECK-FIXES-NEXT: {{^}}    grads_.clear();{{$}}
// CHECK-FIXES: {{^}}    scaler_.step(opt_, grads_);{{$}}
// CHECK-FIXES: {{^}}  amp::GradScaler scaler_;{{$}}
// CHECK-FIXES-NEXT: {{^}}  std::vector<torch::Tensor> grads_; // the grads from scaled() to stepped(){{$}}
