// RUN: %check_amp %s %t.cpp
// Loops between the backward and step() that touch nothing of the parameters but their .grad
// (issue #12 item 3): each iteration works on one gradient alone, so the loop carries over to the
// explicit grads one for one, whatever their order, and `p.grad()` / `p.mutable_grad()` become the
// loop's gradient. With several optimizers a loop over one optimizer's parameters takes that
// optimizer's grads; a loop over the model's parameters is reported.
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void scaled(Net &model, torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler,
            const torch::Tensor &data, int world) {
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = model->forward(data).sum();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  for (auto &p : model->parameters()) {
    if (p.grad().defined())
      p.mutable_grad().div_(world); // average over ranks
  }
  scaler.unscale_(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
  for (const auto &param : optimizer.parameters())
    param.grad().clamp_(-1.0, 1.0);
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

void bf16(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto loss = model->forward(data).sum();
  at::autocast::set_enabled(false);
  loss.backward();
  for (torch::Tensor &p : model->parameters())
    p.grad() /= 2.0;
  optimizer.step();
}

void two_optimizers(Net &enc, Net &dec, torch::optim::SGD &enc_opt, torch::optim::SGD &dec_opt,
                    torch::amp::GradScaler &scaler, const torch::Tensor &data) {
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = dec->forward(enc->forward(data)).sum();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.unscale_(enc_opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
  for (auto &p : enc_opt.parameters())
    p.grad().mul_(0.5);
  scaler.step(enc_opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.step(dec_opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

void two_optimizers_model_loop(Net &enc, Net &dec, torch::optim::SGD &enc_opt,
                               torch::optim::SGD &dec_opt, torch::amp::GradScaler &scaler,
                               const torch::Tensor &data) {
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = dec->forward(enc->forward(data)).sum();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  for (auto &p : enc->parameters())
    p.grad().mul_(0.5);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: not migrated automatically: `for (auto &p : enc->parameters()) ...` loops over the model's parameters while several optimizers step with one loss; which optimizer's grads it means is not known: migrate this step by hand [amp-manual-migration]
  scaler.step(enc_opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.step(dec_opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}void scaled(Net &model, torch::optim::SGD &optimizer, amp::GradScaler &scaler,{{$}}
// CHECK-FIXES-NEXT: {{^}}            const torch::Tensor &data, int world) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  torch::Tensor loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}    loss = amp::cast_to_adapter_tensor(amp_model->forward(data)).sum();{{$}}
// CHECK-FIXES-NEXT: {{^}}    return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  for (auto &p_grad : grads) {{{$}}
// CHECK-FIXES-NEXT: {{^}}    if (p_grad.defined()){{$}}
// CHECK-FIXES-NEXT: {{^}}      p_grad.div_(world); // average over ranks{{$}}
// CHECK-FIXES-NEXT: {{^}}  }{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.unscale_(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  for (auto &param_grad : grads){{$}}
// CHECK-FIXES-NEXT: {{^}}    param_grad.clamp_(-1.0, 1.0);{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.update();{{$}}
// CHECK-FIXES-NEXT: {{^}}}{{$}}
// CHECK-FIXES: {{^}}void bf16(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto loss = amp::cast_to_adapter_tensor(amp_model->forward(data)).sum();{{$}}
// CHECK-FIXES-NEXT: {{^}}    return loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [loss_value, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  for (auto &p_grad : grads){{$}}
// CHECK-FIXES-NEXT: {{^}}    p_grad /= 2.0;{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::step(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}}{{$}}
// CHECK-FIXES: {{^}}void two_optimizers(Net &enc, Net &dec, torch::optim::SGD &enc_opt, torch::optim::SGD &dec_opt,{{$}}
// CHECK-FIXES-NEXT: {{^}}                    amp::GradScaler &scaler, const torch::Tensor &data) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  torch::Tensor loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_dec = amp::auto_mixed_precision(dec, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_enc = amp::auto_mixed_precision(enc, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}    loss = amp::cast_to_adapter_tensor(amp_dec->forward(amp::cast_to_adapter_tensor(amp_enc->forward(data)))).sum();{{$}}
// CHECK-FIXES-NEXT: {{^}}    return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(enc_opt, dec_opt));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [grads_enc_opt, grads_dec_opt] = amp::split_grads(grads, enc_opt, dec_opt);{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.unscale_(enc_opt, grads_enc_opt);{{$}}
// CHECK-FIXES-NEXT: {{^}}  for (auto &p_grad : grads_enc_opt){{$}}
// CHECK-FIXES-NEXT: {{^}}    p_grad.mul_(0.5);{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(enc_opt, grads_enc_opt);{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(dec_opt, grads_dec_opt);{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.update();{{$}}
// CHECK-FIXES-NEXT: {{^}}}{{$}}
