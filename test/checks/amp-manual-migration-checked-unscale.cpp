// RUN: %check_amp %s %t.cpp
// A checked unscale whose answer is used (`bool finite = scaler.unscale_and_check(opt);`): the
// explicit-grad unscale_ returns nothing, so the rewrite would not keep the program's meaning
// (nor compile). Reported with the call named; nothing is edited.
#include <torch/torch.h>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

class CheckedScaler {
public:
  torch::Tensor scale(const torch::Tensor &loss);
  bool unscale_and_check(torch::optim::Optimizer &opt);
  void step(torch::optim::Optimizer &opt);
  void update();
};

void train(Net &model, torch::optim::SGD &opt, const torch::Tensor &data, int &skipped) {
  CheckedScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled{{.*}} [amp-autocast-scope]
    loss = model->forward(data).sum();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
  bool finite = scaler.unscale_and_check(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:17: warning: not migrated automatically: the result of `scaler.unscale_and_check(opt)` is used (a checked unscale); the explicit-grad unscale_ returns nothing: test the grads yourself (all finite) or migrate this step by hand [amp-manual-migration]
  // CHECK-MESSAGES: :[[@LINE-2]]:17: warning: unscale_() without explicit grads{{.*}} [amp-scaler-unscale]
  if (!finite)
    ++skipped;
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads{{.*}} [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}  bool finite = scaler.unscale_and_check(opt);{{$}}
