// RUN: %check_amp %s %t.cpp
// A checked unscale whose answer is used, where what the answer means is not known: an unscale
// method in neither scaler.methods.checked-unscale-finite nor checked-unscale-found-inf (a bool
// unscale_), or one answering something other than a bool (a count). Guessing from the name could
// invert the program's skip test, so the step is reported with the call named; nothing is edited.
// (unscale_and_check answering a bool is rewritten: amp-scaler-unscale-checked.cpp.)
#include <torch/torch.h>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

class BoolUnscaleScaler {
public:
  torch::Tensor scale(const torch::Tensor &loss);
  bool unscale_(torch::optim::Optimizer &opt);
  void step(torch::optim::Optimizer &opt);
  void update();
};

class CountingScaler {
public:
  torch::Tensor scale(const torch::Tensor &loss);
  int unscale_and_check(torch::optim::Optimizer &opt); // how many grads were not finite
  void step(torch::optim::Optimizer &opt);
  void update();
};

void meaning_unknown(Net &model, torch::optim::SGD &opt, const torch::Tensor &data, int &skipped) {
  BoolUnscaleScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    // CHECK-MESSAGES: :[[@LINE+2]]:5: note: the scope ends here
    loss = model->forward(data).sum();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  bool answer = scaler.unscale_(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:17: warning: not migrated automatically: the result of `scaler.unscale_(opt)` is used (a checked unscale), and the rules do not say what its answer means: name 'unscale_' in scaler.methods.checked-unscale-finite (true when every grad is finite) or checked-unscale-found-inf (true when an inf or NaN was found) of a rule file, or migrate this step by hand [amp-manual-migration]
  // CHECK-MESSAGES: :[[@LINE-2]]:17: warning: checked unscale without explicit grads; with explicit gradients it takes them and answers whether every grad is finite: unscale_and_check(optimizer, grads) [amp-scaler-unscale]
  if (!answer)
    ++skipped;
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

void not_a_bool(Net &model, torch::optim::SGD &opt, const torch::Tensor &data, int &skipped) {
  CountingScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    // CHECK-MESSAGES: :[[@LINE+2]]:5: note: the scope ends here
    loss = model->forward(data).sum();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  skipped += scaler.unscale_and_check(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:14: warning: not migrated automatically: the result of `scaler.unscale_and_check(opt)` is used, and its type is 'int', not bool; the checked unscale unscale_and_check(optimizer, grads) answers whether every grad is finite: migrate this step by hand [amp-manual-migration]
  // CHECK-MESSAGES: :[[@LINE-2]]:14: warning: checked unscale without explicit grads; with explicit gradients it takes them and answers whether every grad is finite: unscale_and_check(optimizer, grads) [amp-scaler-unscale]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

// CHECK-FIXES: {{^}}  BoolUnscaleScaler scaler;{{$}}
// CHECK-FIXES: {{^}}  bool answer = scaler.unscale_(opt);{{$}}
// CHECK-FIXES: {{^}}  CountingScaler scaler;{{$}}
// CHECK-FIXES: {{^}}  skipped += scaler.unscale_and_check(opt);{{$}}
