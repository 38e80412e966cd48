// A training step in a header that two translation units include; one of them defines
// INSPECT_GRADS first, which reads .grad between backward() and step().
#pragma once
#include <torch/torch.h>
#include "scaler.h"

void inspect(const torch::Tensor &g);

inline void header_step(torch::nn::Linear &model, torch::optim::SGD &optimizer,
                        const torch::Tensor &x, const torch::Tensor &y) {
  torch::amp::GradScaler scaler;
  at::autocast::set_enabled(true);
  auto loss = torch::mse_loss(model(x), y);
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
#ifdef INSPECT_GRADS
  for (auto &p : model->parameters())
    inspect(p.grad());
#endif
  scaler.step(optimizer);
  scaler.update();
}
