// RUN: %check_amp %s %t.cpp
// Steps in templates that this file never instantiates. Clang resolves a call on a template
// parameter (`model->forward(x)`, then `scaler.scale(loss)` of the `auto loss` computed from it)
// only in an instantiation, so the template's own definition holds calls whose meaning is not
// known. The reason says exactly that, naming the template and an unresolved call; it never
// says the step is in another function, and a scope there is never called inference. (With one
// instantiation the same steps migrate: amp-scaler-implicit-grad-templates.cpp.)
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

// (a) The scaler and the optimizer have types of their own; only the model is a parameter.
template <class Model>
float model_dependent(Model &model, torch::optim::Optimizer &opt, torch::amp::GradScaler &scaler,
                      const torch::Tensor &x) {
  opt.zero_grad();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: zero_grad() clears the .grad that this step's backward fills; keep it while the step is migrated by hand {{.*}} [amp-zero-grad]
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: not migrated automatically: this step is in the function template 'model_dependent', which this translation unit never instantiates; its calls on dependent types are not resolved (`model->forward(x).sum()` at line [[@LINE+1]]), so what they do is not known: instantiate it in a file of the compile database, or migrate by hand [amp-manual-migration]
  auto loss = model->forward(x).sum();
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  scaler.scale(loss).backward();
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads{{.*}} [amp-scaler-step]
  scaler.update();
  return loss.template item<float>();
}
// CHECK-FIXES: {{^}}float model_dependent(Model &model, torch::optim::Optimizer &opt, torch::amp::GradScaler &scaler,{{$}}
// CHECK-FIXES-NEXT: {{^}}                      const torch::Tensor &x) {{[{]}}{{$}}
// CHECK-FIXES-NEXT: {{^}}  opt.zero_grad();{{$}}
// CHECK-FIXES-NEXT: {{^}}  at::autocast::set_enabled(true);{{$}}

// (b) The scaler is a template parameter too.
template <class Model, class Scaler>
void scaler_dependent(Model &model, torch::optim::Optimizer &opt, Scaler &scaler,
                      const torch::Tensor &x) {
  opt.zero_grad();
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: not migrated automatically: this autocast scope is in the function template 'scaler_dependent', which this translation unit never instantiates; its calls on dependent types are not resolved (`model->forward(x).sum()` at line [[@LINE+1]]), so what they do is not known: instantiate it in a file of the compile database, or migrate by hand [amp-manual-migration]
  auto loss = model->forward(x).sum();
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  scaler.scale(loss).backward();
  scaler.step(opt);
  scaler.update();
}

// (c) Everything is a template parameter.
template <class Model, class Optimizer, class Scaler>
void all_dependent(Model &model, Optimizer &opt, Scaler &scaler, const torch::Tensor &x) {
  opt.zero_grad();
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: not migrated automatically: this autocast scope is in the function template 'all_dependent', which this translation unit never instantiates; its calls on dependent types are not resolved (`model->forward(x).sum()` at line [[@LINE+1]]), {{.*}} [amp-manual-migration]
  auto loss = model->forward(x).sum();
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  scaler.scale(loss).backward();
  scaler.step(opt);
  scaler.update();
}

// Member functions of class templates: (a) and (b). The class `Trainer<Net>` is instantiated,
// its train_step() is not (nothing calls it), which is what counts.
template <class Model> class Trainer {
public:
  void train_step(const torch::Tensor &x) {
    opt_->zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() clears the .grad {{.*}} [amp-zero-grad]
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
    // CHECK-MESSAGES: :[[@LINE-2]]:5: warning: not migrated automatically: this step is in the member function 'train_step' of the class template 'Trainer', which this translation unit never instantiates; its calls on dependent types are not resolved (`model_->forward(x).sum()` at line [[@LINE+1]]), {{.*}} [amp-manual-migration]
    auto loss = model_->forward(x).sum();
    at::autocast::set_enabled(false);
    at::autocast::clear_cache();
    scaler_.scale(loss).backward();
    scaler_.step(*opt_);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler_.update();
  }
  Model model_;
  std::shared_ptr<torch::optim::SGD> opt_;
  torch::amp::GradScaler scaler_;
};
Trainer<Net> *make_trainer() { return new Trainer<Net>(); }

template <class Model, class Scaler> class ScalerTrainer {
public:
  void train_step(const torch::Tensor &x) {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
    // CHECK-MESSAGES: :[[@LINE-2]]:5: warning: not migrated automatically: this autocast scope is in the member function 'train_step' of the class template 'ScalerTrainer', which this translation unit never instantiates; {{.*}} [amp-manual-migration]
    auto loss = model_->forward(x).sum();
    at::autocast::set_enabled(false);
    at::autocast::clear_cache();
    scaler_.scale(loss).backward();
    scaler_.step(opt_);
    scaler_.update();
  }
  Model model_;
  torch::optim::SGD opt_;
  Scaler scaler_;
};

// The loss handed to a call that argument-dependent lookup resolves only in an instantiation:
// it may run the backward pass, so the scope is not inference (nor said to have no step).
template <class Model>
void handed_on(Model &model, const torch::Tensor &x) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: not migrated automatically: this autocast scope is in the function template 'handed_on', which this translation unit never instantiates; its calls on dependent types are not resolved (`model->forward(x).sum()` at line [[@LINE+1]]), {{.*}} [amp-manual-migration]
  auto loss = model->forward(x).sum();
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  optimize(model, loss);
}

// A generic lambda nothing in the file calls: its calls on the `auto` parameter are unresolved
// too. (Called with one type, it is read through that call and migrates: wild-step-in-lambda.cpp.)
void lambda_never_called(torch::optim::SGD &opt, torch::amp::GradScaler &scaler,
                         const torch::Tensor &x) {
  auto step = [&](auto &model) {
    opt.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() clears the .grad {{.*}} [amp-zero-grad]
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
    // CHECK-MESSAGES: :[[@LINE-2]]:5: warning: not migrated automatically: this step is in the generic lambda at line [[@LINE-5]], which nothing in this translation unit calls; its calls on dependent types are not resolved (`model->forward(x).sum()` at line [[@LINE+1]]), so what they do is not known: call it in this file (a generic lambda called with one type is read through that call), or migrate by hand [amp-manual-migration]
    auto loss = model->forward(x).sum();
    at::autocast::set_enabled(false);
    at::autocast::clear_cache();
    scaler.scale(loss).backward();
    scaler.step(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler.update();
  };
  (void)step;
}

// A template whose body depends on no template parameter's type is analysed as it is: nothing
// is left unresolved (only the loop's bound is a template argument).
template <int Steps>
void fixed_steps(Net &model, torch::optim::SGD &opt, const torch::Tensor &x) {
  torch::amp::GradScaler scaler;
  for (int i = 0; i < Steps; ++i) {
    opt.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant{{.*}} [amp-zero-grad]
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
    auto loss = model->forward(x).sum();
    at::autocast::set_enabled(false);
    at::autocast::clear_cache();
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
    scaler.step(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler.update();
  }
}
// CHECK-FIXES: {{^}}void fixed_steps(Net &model, torch::optim::SGD &opt, const torch::Tensor &x) {{[{]}}{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::GradScaler scaler;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES: {{^}}      return scaler.scale(loss);{{$}}
// CHECK-FIXES: {{^}}    scaler.step(opt, grads);{{$}}
