// RUN: %check_amp %s %t.cpp --level=O1
// WILD: a GAN's two steps in one loop, each with its optimizer and its scaler, the two scalers
// declared in one statement. The discriminator's scope runs both networks, the generator's runs
// the discriminator on the generator's output from the other scope. Each network is converted
// once before the loop for both steps (one declaration each, shared by the two fixes); the
// scalers' statement is retyped once with each scaler's own options. At O2/O3 the same loop is
// manual (wild-gan-two-steps-o2.cpp).
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void train(Net &gen, Net &disc, torch::optim::Adam &opt_g,
           torch::optim::Adam &opt_d, const torch::Tensor &real, const torch::Tensor &noise) {
  torch::amp::GradScaler scaler_g(1024.0), scaler_d(512.0);
  for (int step = 0; step < 100; ++step) {
    opt_d.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant{{.*}} [amp-zero-grad]
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled{{.*}} [amp-autocast-scope]
    auto fake = gen->forward(noise);
    auto loss_d = torch::mse_loss(disc->forward(real), real) +
                  torch::mse_loss(disc->forward(fake.detach()), real);
    at::autocast::set_enabled(false);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: note: the scope ends here
    scaler_d.scale(loss_d).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss {{.*}} [amp-scaler-implicit-grad]
    scaler_d.step(opt_d);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler_d.update();
    opt_g.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant{{.*}} [amp-zero-grad]
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled{{.*}} [amp-autocast-scope]
    auto loss_g = torch::mse_loss(disc->forward(fake), real);
    at::autocast::set_enabled(false);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: note: the scope ends here
    scaler_g.scale(loss_g).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss {{.*}} [amp-scaler-implicit-grad]
    scaler_g.step(opt_g);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler_g.update();
  }
}
// CHECK-FIXES: {{^}}  amp::GradScaler scaler_g(amp::GradScalerOptions().init_scale(1024.0)), scaler_d(amp::GradScalerOptions().init_scale(512.0));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_gen = amp::auto_mixed_precision(gen, amp::Level::O1, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_disc = amp::auto_mixed_precision(disc, amp::Level::O1, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  for (int step = 0; step < 100; ++step) {{[{]}}{{$}}
// CHECK-FIXES-NEXT: {{^}}    torch::Tensor fake;{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto grad_fn = amp::value_and_grad([&] {{[{]}}{{$}}
// CHECK-FIXES-NEXT: {{^}}      fake = amp::cast_to_adapter_tensor(amp_gen->forward(noise));{{$}}
// CHECK-FIXES:      {{^}}    }, amp::parameters_of(opt_d));{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler_d.step(opt_d, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler_d.update();{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto grad_fn2 = amp::value_and_grad([&] {{[{]}}{{$}}
// CHECK-FIXES-NEXT: {{^}}      auto loss_g = torch::mse_loss(amp::cast_to_adapter_tensor(amp_disc->forward(fake)), real);{{$}}
// CHECK-FIXES-NEXT: {{^}}      return scaler_g.scale(loss_g);{{$}}
// CHECK-FIXES-NEXT: {{^}}    }, amp::parameters_of(opt_g));{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto [scaled_loss2, grads2] = grad_fn2();{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler_g.step(opt_g, grads2);{{$}}
