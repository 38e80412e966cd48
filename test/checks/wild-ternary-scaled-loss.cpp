// RUN: %check_amp %s %t.cpp
// WILD: the scaled and the plain loss chosen in one expression, `(use_amp ? scaler.scale(loss) :
// loss).backward()`. There is a scaled backward, in a shape the rewrite does not take: the step is
// reported at the backward, with the if/else form that is rewritten (a mixed step).
#include <torch/torch.h>
#include "scaler.h"
struct NetImpl : torch::nn::Module { torch::Tensor forward(const torch::Tensor &x); };
TORCH_MODULE(Net);
void ternary(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler, const torch::Tensor &x, bool use_amp) {
  opt.zero_grad();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: zero_grad() clears the .grad that this step's backward fills; keep it while the step is migrated by hand (see amp-manual-migration): with explicit gradients from amp::value_and_grad it is redundant [amp-zero-grad]
  torch::Tensor loss;
  {
    if (use_amp) at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:18: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = model->forward(x).sum();
    if (use_amp) at::autocast::set_enabled(false);
  }
  (use_amp ? scaler.scale(loss) : loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: backward() runs on `(use_amp ? scaler.scale(loss) : loss)`, which holds the scale() call inside a larger expression; write the scaled and the plain path as `if (...) scaler.scale(loss).backward(); else loss.backward();` (rewritten as a mixed step) or migrate this step by hand [amp-manual-migration]
  if (use_amp) {
    scaler.step(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  } else {
    opt.step();
  }
}
