// REQUIRES: libtorch
// RUN: %check_amp_real %s %t.cpp --level=O1 -- -isystem %torch_include -I %amp_torch_include -I %amp_runtime_include
// WILD (issue 38, item 7): reasons that were false, over real libtorch headers. A mixed step whose
// scaled/plain choice of the step is in another block than the backward's (a gradient
// accumulation: the backward in the loop, `if (use_amp) scaler.step(opt); else opt.step();` after
// it, or under the every-k-th-iteration condition) has a step() on its plain path; it is refused
// because the step is outside the backward's paths, not because the plain path has none. A step
// with no loss scaler is never said to have a "scaled backward".
#include <ATen/autocast_mode.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>
#include <vector>

namespace train {
// The common C++ port of Python's GradScaler (implicit gradients).
class GradScaler {
public:
  torch::Tensor scale(const torch::Tensor &loss) const;
  void step(torch::optim::Optimizer &optimizer);
  void update();
};
} // namespace train

void accumulate_then_step(torch::nn::Linear &model, torch::optim::Adam &opt,
                          train::GradScaler &scaler, const std::vector<torch::Tensor> &xs,
                          const torch::Tensor &y, bool use_amp) {
  for (const auto &x : xs) {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
    // CHECK-MESSAGES: :[[@LINE+3]]:5: note: the scope ends here{{.*}}
    // CHECK-MESSAGES: :[[@LINE+7]]:7: note: the plain path (no scaler) backpropagates the loss computed in this scope here; it takes the grads of amp::value_and_grad too, and its step becomes amp::step(optimizer, grads)
    auto loss = torch::mse_loss(model(x), y);
    at::autocast::set_enabled(false);
    if (use_amp)
      scaler.scale(loss).backward();
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
    else
      loss.backward();
  }
  if (use_amp) {
    scaler.step(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: not migrated automatically: a step with a scaled and a plain path (chosen by `use_amp`) has this call outside them or under another loop or condition (a gradient accumulation?); not rewritten automatically [amp-manual-migration]
    // CHECK-MESSAGES: :[[@LINE-2]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler.update();
  } else {
    opt.step();
  }
}

void step_every_k(torch::nn::Linear &model, torch::optim::Adam &opt, train::GradScaler &scaler,
                  const torch::Tensor &x, const torch::Tensor &y, bool use_amp, int i) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE+3]]:3: note: the scope ends here{{.*}}
  // CHECK-MESSAGES: :[[@LINE+7]]:5: note: the plain path (no scaler) backpropagates the loss computed in this scope here; it takes the grads of amp::value_and_grad too, and its step becomes amp::step(optimizer, grads)
  auto loss = torch::mse_loss(model(x), y);
  at::autocast::set_enabled(false);
  if (use_amp)
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
  else
    loss.backward();
  if ((i + 1) % 4 == 0) {
    if (use_amp) {
      scaler.step(opt);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: not migrated automatically: a step with a scaled and a plain path (chosen by `use_amp`) has this call outside them or under another loop or condition (a gradient accumulation?); not rewritten automatically [amp-manual-migration]
      // CHECK-MESSAGES: :[[@LINE-2]]:7: warning: step() without explicit grads{{.*}} [amp-scaler-step]
      scaler.update();
    } else {
      opt.step();
    }
  }
}

// No scaler: the backward and the step under `if (train)`, the scope before it.
void plain_in_if(torch::nn::Linear &model, torch::optim::Adam &opt, const torch::Tensor &x,
                 const torch::Tensor &y, bool train) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE+4]]:3: note: the scope ends here{{.*}}
  // CHECK-MESSAGES: :[[@LINE+5]]:5: note: the loss computed in this scope is backpropagated here, with no loss scaler{{.*}}
  // CHECK-MESSAGES: :[[@LINE-4]]:3: warning: not migrated automatically: the autocast scope and the backward are in different blocks [amp-manual-migration]
  auto loss = torch::mse_loss(model(x), y);
  at::autocast::set_enabled(false);
  if (train) {
    loss.backward();
    opt.step();
  }
}
