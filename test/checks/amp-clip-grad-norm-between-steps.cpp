// RUN: %check_amp %s %t.cpp
// Two optimizers sharing a scaler, the second one's clip between the two step() calls: the clip
// belongs to the step (one membership rule in the analysis) and is rewritten onto that
// optimizer's grads, where it still runs before its step. Never left behind on .grad.
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void train(Net &enc, Net &dec, const torch::Tensor &data, const torch::Tensor &target) {
  torch::optim::SGD enc_opt(enc->parameters(), torch::optim::SGDOptions(0.1));
  torch::optim::SGD dec_opt(dec->parameters(), torch::optim::SGDOptions(0.1));
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
    loss = torch::mse_loss(dec->forward(enc->forward(data)), target);
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
  scaler.unscale_(enc_opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads{{.*}} [amp-scaler-unscale]
  scaler.unscale_(dec_opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads{{.*}} [amp-scaler-unscale]
  scaler.step(enc_opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads{{.*}} [amp-scaler-step]
  torch::nn::utils::clip_grad_norm_(dec_opt.parameters(), 1.0);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: clipping the parameters' .grad inside a scaled step{{.*}} [amp-clip-grad-norm]
  scaler.step(dec_opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads{{.*}} [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}  auto [grads_enc_opt, grads_dec_opt] = amp::split_grads(grads, enc_opt, dec_opt);
// CHECK-FIXES-NEXT: {{^}}  scaler.unscale_(enc_opt, grads_enc_opt);
// CHECK-FIXES-NEXT: {{^}}  scaler.unscale_(dec_opt, grads_dec_opt);
// CHECK-FIXES-NEXT: {{^}}  scaler.step(enc_opt, grads_enc_opt);
// CHECK-FIXES-NEXT: {{^}}  amp::clip_by_global_norm_(grads_dec_opt, 1.0);
// CHECK-FIXES-NEXT: {{^}}  scaler.step(dec_opt, grads_dec_opt);
// CHECK-FIXES-NEXT: {{^}}  scaler.update();

// The second optimizer's clip before its own unscale_(): still-scaled gradients (a bug today),
// though the first optimizer's unscale_() comes before it.
void clip_before_own_unscale(Net &enc, Net &dec, torch::optim::SGD &enc_opt,
                             torch::optim::SGD &dec_opt, const torch::Tensor &data) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled{{.*}} [amp-autocast-scope]
    loss = dec->forward(enc->forward(data)).sum();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
  scaler.unscale_(enc_opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads{{.*}} [amp-scaler-unscale]
  torch::nn::utils::clip_grad_norm_(dec_opt.parameters(), 1.0);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: clipping still-scaled gradients: no unscale_() before this clip{{.*}} [amp-clip-before-unscale]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: clipping the parameters' .grad inside a scaled step{{.*}} [amp-clip-grad-norm]
  // CHECK-MESSAGES: :[[@LINE-3]]:3: warning: not migrated automatically: clipping still-scaled gradients{{.*}} [amp-manual-migration]
  scaler.step(enc_opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads{{.*}} [amp-scaler-step]
  scaler.step(dec_opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads{{.*}} [amp-scaler-step]
  scaler.update();
}
