// RUN: %check_amp %s %t.cpp
// WILD: several optimizers sharing one scaler, one scaled loss: one step() each, one update().
// The grads are taken w.r.t. all the optimizers' parameters (amp::parameters_of) and split back
// into one list per optimizer (amp::split_grads) for its unscale_/clip/step; after a gradient
// accumulation the summed list is split before the first unscale_/step. Clipping a model's
// parameters (which optimizer's list?) and stepping one optimizer twice are reported.
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void encoder_decoder(Net &enc, Net &dec, const torch::Tensor &data, const torch::Tensor &target,
                     int steps) {
  torch::optim::Adam enc_opt(enc->parameters(), torch::optim::AdamOptions(1e-3));
  auto dec_opt = std::make_shared<torch::optim::SGD>(dec->parameters(), torch::optim::SGDOptions(0.1));
  torch::amp::GradScaler scaler;
  for (int step = 0; step < steps; ++step) {
    enc_opt.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant{{.*}} [amp-zero-grad]
    dec_opt->zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant{{.*}} [amp-zero-grad]
    torch::Tensor loss;
    {
      at::autocast::set_enabled(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
      loss = torch::mse_loss(dec->forward(enc->forward(data)), target);
      at::autocast::set_enabled(false);
    }
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
    scaler.unscale_(enc_opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: unscale_() without explicit grads{{.*}} [amp-scaler-unscale]
    torch::nn::utils::clip_grad_norm_(enc_opt.parameters(), 1.0);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: {{.*}} [amp-clip-grad-norm]
    scaler.step(enc_opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler.step(*dec_opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler.update();
  }
}
// CHECK-FIXES: {{^}}  amp::GradScaler scaler;
// CHECK-FIXES-NEXT: {{^}}  auto amp_dec = amp::auto_mixed_precision(dec, amp::Level::O2, torch::kCUDA);
// CHECK-FIXES-NEXT: {{^}}  auto amp_enc = amp::auto_mixed_precision(enc, amp::Level::O2, torch::kCUDA);
// CHECK-FIXES-NEXT: {{^}}  for (int step = 0; step < steps; ++step) {
// CHECK-FIXES-NEXT: {{^}}    torch::Tensor loss;
// CHECK-FIXES-NEXT: {{^}}    auto grad_fn = amp::value_and_grad([&] {
// CHECK-FIXES: {{^}}      loss = torch::mse_loss(amp::cast_to_adapter_tensor(amp_dec->forward(amp::cast_to_adapter_tensor(amp_enc->forward(data)))), target);
// CHECK-FIXES-NEXT: {{^}}      return scaler.scale(loss);
// CHECK-FIXES-NEXT: {{^}}    }, amp::parameters_of(enc_opt, *dec_opt));
// CHECK-FIXES-NEXT: {{^}}    auto [scaled_loss, grads] = grad_fn();
// CHECK-FIXES-NEXT: {{^}}    auto [grads_enc_opt, grads_dec_opt] = amp::split_grads(grads, enc_opt, *dec_opt);
// CHECK-FIXES: {{^}}    scaler.unscale_(enc_opt, grads_enc_opt);
// CHECK-FIXES: {{^}}    amp::clip_by_global_norm_(grads_enc_opt, 1.0);
// CHECK-FIXES: {{^}}    scaler.step(enc_opt, grads_enc_opt);
// CHECK-FIXES: {{^}}    scaler.step(*dec_opt, grads_dec_opt);
// CHECK-FIXES: {{^}}    scaler.update();

void clip_model_params(Net &gen, Net &disc, torch::optim::Adam &opt_g, torch::optim::Adam &opt_d,
                       const torch::Tensor &data, const torch::Tensor &target) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
    loss = torch::mse_loss(disc->forward(gen->forward(data)), target);
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
  scaler.unscale_(opt_g);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads{{.*}} [amp-scaler-unscale]
  torch::nn::utils::clip_grad_norm_(gen->parameters(), 1.0);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: {{.*}} [amp-clip-grad-norm]
  // CHECK-MESSAGES: :[[@LINE-2]]:37: warning: not migrated automatically: with several optimizers, clipping a model's parameters: which optimizer's grads to clip is unknown; clip optimizer.parameters() or migrate by hand [amp-manual-migration]
  scaler.step(opt_g);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads{{.*}} [amp-scaler-step]
  scaler.step(opt_d);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads{{.*}} [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}void clip_model_params(
// CHECK-FIXES-NEXT: {{^}}                       const torch::Tensor &data, const torch::Tensor &target) {
// CHECK-FIXES-NEXT: {{^}}  torch::amp::GradScaler scaler;
// CHECK-FIXES: {{^}}  scaler.scale(loss).backward();
// CHECK-FIXES: {{^}}  scaler.step(opt_d);

void step_twice(Net &model, torch::optim::Adam &opt, const torch::Tensor &data,
                const torch::Tensor &target) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
    loss = torch::mse_loss(model->forward(data), target);
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads{{.*}} [amp-scaler-step]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: step() called more than once for one backward [amp-manual-migration]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: step() without explicit grads{{.*}} [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}void step_twice(
// CHECK-FIXES: {{^}}  torch::amp::GradScaler scaler;
// CHECK-FIXES: {{^}}  scaler.step(opt);
// CHECK-FIXES: {{^}}  scaler.step(opt);

void after_accumulation(Net &model, torch::optim::SGD &opt_a, torch::optim::SGD &opt_b,
                        const torch::Tensor &data, const torch::Tensor &target, int k) {
  torch::amp::GradScaler scaler;
  for (int i = 0; i < k; ++i) {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
    auto loss = torch::mse_loss(model->forward(data), target) / k;
    at::autocast::set_enabled(false);
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
  }
  scaler.step(opt_a);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads{{.*}} [amp-scaler-step]
  scaler.step(opt_b);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads{{.*}} [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}void after_accumulation(
// CHECK-FIXES: {{^}}  amp::GradScaler scaler;
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);
// CHECK-FIXES-NEXT: {{^}}  std::vector<torch::Tensor> grads;
// CHECK-FIXES: {{^}}    }, amp::parameters_of(opt_a, opt_b));
// CHECK-FIXES-NEXT: {{^}}    auto [scaled_loss, micro_grads] = grad_fn();
// CHECK-FIXES-NEXT: {{^}}    amp::accumulate_grads(grads, micro_grads);
// CHECK-FIXES: {{^}}  auto [grads_opt_a, grads_opt_b] = amp::split_grads(grads, opt_a, opt_b);
// CHECK-FIXES-NEXT: {{^}}  scaler.step(opt_a, grads_opt_a);
// CHECK-FIXES: {{^}}  scaler.step(opt_b, grads_opt_b);

// After an accumulation the list holds every optimizer's grads: their zero_grad() calls together
// become one clear(); one optimizer's zero_grad() alone would clear the others' sums: reported.
void accumulate_epochs(Net &model, torch::optim::SGD &opt_a, torch::optim::SGD &opt_b,
                       const torch::Tensor &data, const torch::Tensor &target, int steps, int k) {
  torch::amp::GradScaler scaler;
  for (int step = 0; step < steps; ++step) {
    opt_a.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() ends a gradient accumulation{{.*}} [amp-zero-grad]
    opt_b.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() ends a gradient accumulation{{.*}} [amp-zero-grad]
    for (int i = 0; i < k; ++i) {
      at::autocast::set_enabled(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
      auto loss = torch::mse_loss(model->forward(data), target) / k;
      at::autocast::set_enabled(false);
      scaler.scale(loss).backward();
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
    }
    scaler.step(opt_a);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler.step(opt_b);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler.update();
  }
}
// CHECK-FIXES: {{^}}void accumulate_epochs(
// CHECK-FIXES: {{^}}  std::vector<torch::Tensor> grads;
// CHECK-FIXES-NEXT: {{^}}  for (int step = 0; step < steps; ++step) {
// CHECK-FIXES-NEXT: {{^}}    grads.clear();
// CHECK-FIXES-NOT: grads.clear();
// CHECK-FIXES: {{^}}    for (int i = 0; i < k; ++i) {
// CHECK-FIXES: {{^}}    auto [grads_opt_a, grads_opt_b] = amp::split_grads(grads, opt_a, opt_b);

void clear_one(Net &model, torch::optim::SGD &opt_a, torch::optim::SGD &opt_b,
               const torch::Tensor &data, const torch::Tensor &target, int steps, int k) {
  torch::amp::GradScaler scaler;
  for (int step = 0; step < steps; ++step) {
    opt_a.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: not migrated automatically: with several optimizers after a gradient accumulation, zero_grad() of some optimizers only: the summed grads of the others would be cleared too [amp-manual-migration]
    // CHECK-MESSAGES: :[[@LINE-2]]:5: warning: zero_grad() ends a gradient accumulation{{.*}} [amp-zero-grad]
    for (int i = 0; i < k; ++i) {
      at::autocast::set_enabled(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
      auto loss = torch::mse_loss(model->forward(data), target) / k;
      at::autocast::set_enabled(false);
      scaler.scale(loss).backward();
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
    }
    scaler.step(opt_a);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler.step(opt_b);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler.update();
  }
}
// CHECK-FIXES: {{^}}void clear_one(
// CHECK-FIXES: {{^}}  torch::amp::GradScaler scaler;
// CHECK-FIXES: {{^}}    opt_a.zero_grad();
