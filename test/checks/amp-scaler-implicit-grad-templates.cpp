// RUN: %check_amp %s %t.cpp
// Steps in templates. The parse hands every instantiated function body over beside its pattern; a
// template instantiated once in the file is analysed through that instantiation (where calls on
// template parameters are resolved) and not also through its pattern, so its step is reported and
// rewritten once. A scaler whose declared type is a template parameter cannot be retyped in the
// template, and a template instantiated several times keeps its dependent calls unresolved: both
// are reported with the reason.
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);
struct OtherImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Other);

template <class Model> class Trainer {
public:
  float train_step(const torch::Tensor &x) {
    opt_->zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss = model_->forward(x).sum();
    at::autocast::set_enabled(false);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: note: the scope ends here
    at::autocast::clear_cache();
    scaler_.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss {{.*}} [amp-scaler-implicit-grad]
    scaler_.step(*opt_);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler_.update();
    return 0;
  }
  Model model_;
  std::shared_ptr<torch::optim::SGD> opt_;
  torch::amp::GradScaler scaler_;
};
float run_trainer(Trainer<Net> &t, const torch::Tensor &x) { return t.train_step(x); }
// CHECK-FIXES: {{^}}    auto amp_model = amp::auto_mixed_precision(model_, amp::Level::O2);{{$}}
// CHECK-FIXES: {{^}}    scaler_.step(*opt_, grads);{{$}}
// CHECK-FIXES: {{^}}  amp::GradScaler scaler_;{{$}}

template <class Model, class Scaler> class ParamScalerTrainer {
public:
  void train_step(const torch::Tensor &x) {
    opt_.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() clears the .grad that this step's backward fills; keep it while the step is migrated by hand {{.*}} [amp-zero-grad]
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled {{.*}} [amp-autocast-scope]
    auto loss = model_->forward(x).sum();
    at::autocast::set_enabled(false);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: note: the scope ends here
    at::autocast::clear_cache();
    scaler_.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss {{.*}} [amp-scaler-implicit-grad]
    scaler_.step(opt_);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: not migrated automatically: the scaler 'scaler_' at {{.*}}amp-scaler-implicit-grad-templates.cpp.tmp.cpp:[[@LINE+6]] is declared with the template parameter 'Scaler' (torch::amp::GradScaler here); it must become amp::GradScaler where the template gets its argument: change that by hand or migrate this step by hand [amp-manual-migration]
    // CHECK-MESSAGES: :[[@LINE-2]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler_.update();
  }
  Model model_;
  torch::optim::SGD opt_;
  Scaler scaler_;
};
void run_param(ParamScalerTrainer<Net, torch::amp::GradScaler> &t, const torch::Tensor &x) {
  t.train_step(x);
}

template <class M>
void twice_instantiated(M &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler,
                        const torch::Tensor &x) {
  opt.zero_grad();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: zero_grad() clears the .grad {{.*}} [amp-zero-grad]
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled {{.*}} [amp-autocast-scope]
  auto loss = model->forward(x).sum();
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  scaler.scale(loss).backward();
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: no scaled backward is recognised in this template, whose calls on template parameters are resolved only in its instantiations, and this file has 2 (a template instantiated once is read through that instantiation); migrate this step by hand [amp-manual-migration]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: step() without explicit grads{{.*}} [amp-scaler-step]
  scaler.update();
}
void run_both(Net &a, Other &b, torch::optim::SGD &opt, torch::amp::GradScaler &s, const torch::Tensor &x) {
  twice_instantiated(a, opt, s, x);
  twice_instantiated(b, opt, s, x);
}
