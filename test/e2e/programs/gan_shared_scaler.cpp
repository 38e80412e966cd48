#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cmath>

#include "common.h"
#include "loss_scaler.h"

// e2e before-program: a GAN's two steps in one loop sharing ONE scaler, each step with its own
// optimizer, step() and update() (PyTorch's AMP examples do this; gan_two_steps has a scaler each).
// The scale that the discriminator's update() leaves is the one the generator's loss is scaled by,
// so the two steps must stay two steps of the one scaler, in this order. The generator's loss goes
// through the output computed in the discriminator's scope, as in gan_two_steps.

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  torch::nn::Sequential gen(torch::nn::Linear(e2e::kClasses, 64), torch::nn::ReLU(),
                            torch::nn::Linear(64, e2e::kInputs));
  torch::nn::Sequential disc(torch::nn::Linear(e2e::kInputs, 64), torch::nn::ReLU(),
                             torch::nn::Linear(64, 1));
  torch::optim::Adam opt_g(gen->parameters(), torch::optim::AdamOptions(1e-3));
  torch::optim::Adam opt_d(disc->parameters(), torch::optim::AdamOptions(1e-3));
  // A short growth interval: both steps' update()s count towards it, and a skipped
  // discriminator step halves the scale that the generator's loss is scaled by next.
  train::GradScaler scaler(65536.0, 2.0, 0.5, 5);
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto real = data.input(step);
    if (step % 7 == 3) // a poisoned batch: the discriminator's grads are NaN, its step is skipped
      real[0][0] = std::nan("");
    auto noise = torch::one_hot(data.target(step), e2e::kClasses).to(torch::kFloat);
    // The discriminator: real against generated.
    opt_d.zero_grad();
    at::autocast::set_cpu_enabled(true);
    auto fake = gen->forward(noise);
    auto d_real = disc->forward(real);
    auto d_fake = disc->forward(fake.detach());
    auto loss_d = torch::binary_cross_entropy_with_logits(d_real, torch::ones_like(d_real)) +
                  torch::binary_cross_entropy_with_logits(d_fake, torch::zeros_like(d_fake));
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
    scaler.scale(loss_d).backward();
    scaler.step(opt_d);
    scaler.update();
    // The generator: through the discriminator just stepped.
    opt_g.zero_grad();
    at::autocast::set_cpu_enabled(true);
    auto g_out = disc->forward(fake);
    auto loss_g = torch::binary_cross_entropy_with_logits(g_out, torch::ones_like(g_out));
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
    scaler.scale(loss_g).backward();
    scaler.step(opt_g);
    scaler.update();
    // The generator's loss: it falls only while the generator is stepped (without its step it
    // ends 7 % higher, which the harness's 2 % bound catches).
    e2e::log_step(step, loss_g);
    e2e::log_scale(step, scaler.get_scale()); // the harness compares it step by step
  }
  auto params = gen->parameters();
  for (const auto &p : disc->parameters())
    params.push_back(p);
  e2e::log_params(params);
}
