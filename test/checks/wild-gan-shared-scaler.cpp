// RUN: %check_amp %s %t.cpp --level=O1
// WILD: one scaler shared by complete steps one after the other. A GAN's discriminator and
// generator steps with one scaler (PyTorch's AMP examples), with an update() after each step or one
// update() after both (the scaler's state is per optimizer); a pre-training loop and a fine-tuning
// loop over the same scaler. A scaled backward that follows a step() of the scaler starts another
// step: each is migrated as a step of its own, in its place, with the one scaler. Several backwards
// before the step()s (one step over several losses) stay one step (wild-multi-optimizer.cpp).
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

struct AutocastGuard {
  AutocastGuard() { at::autocast::set_enabled(true); }
  ~AutocastGuard() { at::autocast::set_enabled(false); }
};

void gan_update_each(Net &gen, Net &disc, torch::optim::Adam &opt_g, torch::optim::Adam &opt_d,
                     const torch::Tensor &real, const torch::Tensor &noise) {
  torch::amp::GradScaler scaler(1024.0);
  for (int step = 0; step < 100; ++step) {
    opt_d.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss_d = torch::mse_loss(disc->forward(real), real) +
                  torch::mse_loss(disc->forward(gen->forward(noise).detach()), real);
    at::autocast::set_enabled(false);
    scaler.scale(loss_d).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(opt_d);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
    opt_g.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss_g = torch::mse_loss(disc->forward(gen->forward(noise)), real);
    at::autocast::set_enabled(false);
    scaler.scale(loss_g).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(opt_g);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  }
}

void gan_one_update(Net &gen, Net &disc, torch::optim::Adam &opt_g, torch::optim::Adam &opt_d,
                    const torch::Tensor &real, const torch::Tensor &noise) {
  torch::amp::GradScaler scaler;
  for (int step = 0; step < 100; ++step) {
    opt_d.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
    torch::Tensor loss_d;
    {
      AutocastGuard guard;
      // CHECK-MESSAGES: :[[@LINE-1]]:21: warning: autocast scope opened by guard 'AutocastGuard'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
      loss_d = torch::mse_loss(disc->forward(gen->forward(noise).detach()), real);
    }
    scaler.scale(loss_d).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(opt_d);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    opt_g.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
    torch::Tensor loss_g;
    {
      AutocastGuard guard;
      // CHECK-MESSAGES: :[[@LINE-1]]:21: warning: autocast scope opened by guard 'AutocastGuard'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
      loss_g = torch::mse_loss(disc->forward(gen->forward(noise)), real);
    }
    scaler.scale(loss_g).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(opt_g);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  }
}

void pretrain_then_finetune(Net &model, torch::optim::SGD &pre_opt, torch::optim::SGD &fine_opt,
                            const torch::Tensor &x, const torch::Tensor &y) {
  torch::amp::GradScaler scaler;
  for (int step = 0; step < 10; ++step) {
    pre_opt.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss = torch::mse_loss(model->forward(x), y);
    at::autocast::set_enabled(false);
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(pre_opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  }
  for (int step = 0; step < 10; ++step) {
    fine_opt.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss = torch::mse_loss(model->forward(x), y);
    at::autocast::set_enabled(false);
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.unscale_(fine_opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
    scaler.step(fine_opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  }
}

// Both backwards before both step()s: one step over two losses, not two steps.
void two_losses_then_steps(Net &a, Net &b, torch::optim::SGD &opt_a, torch::optim::SGD &opt_b,
                           const torch::Tensor &x, const torch::Tensor &y) {
  torch::amp::GradScaler scaler;
  for (int step = 0; step < 10; ++step) {
    opt_a.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
    opt_b.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss_a = torch::mse_loss(a->forward(x), y);
    auto loss_b = torch::mse_loss(b->forward(x), y);
    at::autocast::set_enabled(false);
    scaler.scale(loss_a).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.scale(loss_b).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(opt_a);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.step(opt_b);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  }
}
// CHECK-FIXES: {{^}}  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024.0));{{$}}
// CHECK-FIXES: {{^}}    }, amp::parameters_of(opt_d));{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.step(opt_d, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.update();{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto grad_fn2 = amp::value_and_grad([&] {{[{]}}{{$}}
// CHECK-FIXES: {{^}}    }, amp::parameters_of(opt_g));{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto [scaled_loss2, grads2] = grad_fn2();{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.step(opt_g, grads2);{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.update();{{$}}
// CHECK-FIXES: {{^}}  amp::GradScaler scaler;{{$}}
// CHECK-FIXES: {{^}}    torch::Tensor loss_d;{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto grad_fn = amp::value_and_grad([&] {{[{]}}{{$}}
// CHECK-FIXES-NEXT: {{^}}      loss_d = torch::mse_loss(amp::cast_to_adapter_tensor(amp_disc->forward(amp::cast_to_adapter_tensor(amp_gen->forward(noise)).detach())), real);{{$}}
// CHECK-FIXES: {{^}}    scaler.step(opt_d, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}    torch::Tensor loss_g;{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto grad_fn2 = amp::value_and_grad([&] {{[{]}}{{$}}
// CHECK-FIXES: {{^}}    scaler.step(opt_g, grads2);{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.update();{{$}}
// CHECK-FIXES: {{^}}    }, amp::parameters_of(pre_opt));{{$}}
// CHECK-FIXES: {{^}}    scaler.step(pre_opt, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.update();{{$}}
// CHECK-FIXES-NEXT: {{^}}  }{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model2 = amp::auto_mixed_precision(model, amp::Level::O1, torch::kCUDA);{{$}}
// CHECK-FIXES: {{^}}    }, amp::parameters_of(fine_opt));{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto [scaled_loss2, grads2] = grad_fn2();{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.unscale_(fine_opt, grads2);{{$}}
// CHECK-FIXES-NEXT: {{^}}    amp::check_holds(fine_opt, model->parameters());{{$}}
// CHECK-FIXES-NEXT: {{^}}    amp::clip_by_global_norm_(grads2, 1.0);{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.step(fine_opt, grads2);{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.update();{{$}}
// CHECK-FIXES: {{^}}      return scaler.scale(loss_a) + scaler.scale(loss_b);{{$}}
// CHECK-FIXES-NEXT: {{^}}    }, amp::parameters_of(opt_a, opt_b));{{$}}
