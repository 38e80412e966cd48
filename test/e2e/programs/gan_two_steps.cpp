#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"
#include "loss_scaler.h"

// e2e before-program: a GAN's two steps in one loop, each with its optimizer and its own scaler.
// The discriminator's scope runs both networks (the generator's output detached for its loss);
// the generator's loss goes through that output, computed in the other step's scope. At O1 both
// steps are migrated; at O2/O3 the tool reports both as manual (lit amp-scaler-implicit-grad-gan.cpp).

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  torch::nn::Sequential gen(torch::nn::Linear(e2e::kClasses, 64), torch::nn::ReLU(),
                            torch::nn::Linear(64, e2e::kInputs));
  torch::nn::Sequential disc(torch::nn::Linear(e2e::kInputs, 64), torch::nn::ReLU(),
                             torch::nn::Linear(64, 1));
  torch::optim::Adam opt_g(gen->parameters(), torch::optim::AdamOptions(1e-3));
  torch::optim::Adam opt_d(disc->parameters(), torch::optim::AdamOptions(1e-3));
  train::GradScaler scaler_g(1024.0);
  train::GradScaler scaler_d(1024.0);
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto real = data.input(step);
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
    scaler_d.scale(loss_d).backward();
    scaler_d.step(opt_d);
    scaler_d.update();
    // The generator: through the discriminator just stepped.
    opt_g.zero_grad();
    at::autocast::set_cpu_enabled(true);
    auto g_out = disc->forward(fake);
    auto loss_g = torch::binary_cross_entropy_with_logits(g_out, torch::ones_like(g_out));
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
    scaler_g.scale(loss_g).backward();
    scaler_g.step(opt_g);
    scaler_g.update();
    // The generator's loss: it falls only while the generator is stepped (without its step it
    // ends 7 % higher, which the harness's 2 % bound catches).
    e2e::log_step(step, loss_g);
  }
  auto params = gen->parameters();
  for (const auto &p : disc->parameters())
    params.push_back(p);
  e2e::log_params(params);
}
