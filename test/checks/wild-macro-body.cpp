// RUN: %check_amp %s %t.cpp
// WILD: a macro whose body holds the whole scope and the forward: reported at the macro use as a
// manual migration; the macro body is never edited, so nothing is.
#include <torch/torch.h>
#include "scaler.h"

#define FWD_AMP(out, m, x) { at::autocast::set_enabled(true); out = m->forward(x); at::autocast::set_enabled(false); }

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void train(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
           const torch::Tensor &target) {
  torch::amp::GradScaler scaler;
  torch::Tensor out;
  FWD_AMP(out, model, data);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope opened by a macro (expands to 'at::autocast::set_enabled'); convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: not migrated automatically: an autocast call sits inside a macro body with other code; edit the macro by hand (macro bodies are never edited) [amp-manual-migration]
  // CHECK-MESSAGES: :[[@LINE-3]]:16: warning: not migrated automatically: the model call is inside a macro body [amp-manual-migration]
  auto loss = torch::nll_loss(out, target);
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}#define FWD_AMP(out, m, x) { at::autocast::set_enabled(true); out = m->forward(x); at::autocast::set_enabled(false); }
// CHECK-FIXES: {{^}}  torch::amp::GradScaler scaler;
// CHECK-FIXES: {{^}}  FWD_AMP(out, model, data);
