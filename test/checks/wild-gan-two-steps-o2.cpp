// RUN: %check_amp %s %t.cpp
// WILD: the GAN loop of wild-gan-two-steps.cpp at O2 (the default level). The generator's loss is
// differentiated through `fake`, computed in the discriminator step's forward region: at O2 that
// graph ran on the generator's low-precision weight copies, which are swapped out when the first
// step's value_and_grad returns, so neither step is rewritten (the first alone would break the
// second). A scaler declared in one statement with a scaler no step uses is not retyped.
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
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() clears the .grad that this step's backward fills{{.*}} [amp-zero-grad]
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled{{.*}} [amp-autocast-scope]
    auto fake = gen->forward(noise);
    auto loss_d = torch::mse_loss(disc->forward(real), real) +
                  torch::mse_loss(disc->forward(fake.detach()), real);
    at::autocast::set_enabled(false);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: note: the scope ends here
    // CHECK-MESSAGES: :[[@LINE-5]]:10: warning: not migrated automatically: `fake`, computed in this step's forward region ({{.*}}:[[@LINE-5]]), is differentiated by another training step ({{.*}}:[[@LINE+10]]); at O2 a converted model computes with low-precision copies of its weights {{.*}} migrate with --level=O1, or by hand {{.*}} [amp-manual-migration]
    scaler_d.scale(loss_d).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss {{.*}} [amp-scaler-implicit-grad]
    scaler_d.step(opt_d);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler_d.update();
    opt_g.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() clears the .grad that this step's backward fills{{.*}} [amp-zero-grad]
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled{{.*}} [amp-autocast-scope]
    auto loss_g = torch::mse_loss(disc->forward(fake), real);
    at::autocast::set_enabled(false);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: note: the scope ends here
    // CHECK-MESSAGES: :[[@LINE-3]]:49: warning: not migrated automatically: this step's loss is differentiated through `fake`, computed in the forward region of another training step ({{.*}}:[[@LINE-18]]){{.*}} [amp-manual-migration]
    scaler_g.scale(loss_g).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss {{.*}} [amp-scaler-implicit-grad]
    scaler_g.step(opt_g);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler_g.update();
  }
}

void lone(Net &net, torch::optim::Adam &opt, const torch::Tensor &x) {
  torch::amp::GradScaler scaler(1024.0), spare(512.0);
  // CHECK-MESSAGES: :[[@LINE-1]]:26: warning: not migrated automatically: the scaler is declared in one statement with 'spare', whose type would change with it, and no training step uses 'spare' as its scaler; declare the scaler in a statement of its own [amp-manual-migration]
  opt.zero_grad();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: zero_grad() clears the .grad{{.*}} [amp-zero-grad]
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled{{.*}} [amp-autocast-scope]
  auto loss = net->forward(x).sum();
  at::autocast::set_enabled(false);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: note: the scope ends here
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss {{.*}} [amp-scaler-implicit-grad]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads{{.*}} [amp-scaler-step]
  scaler.update();
  spare.update();
}
// CHECK-FIXES: {{^}}  torch::amp::GradScaler scaler_g(1024.0), scaler_d(512.0);{{$}}
// CHECK-FIXES: {{^}}  torch::amp::GradScaler scaler(1024.0), spare(512.0);{{$}}
