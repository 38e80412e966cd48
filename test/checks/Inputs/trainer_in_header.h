// A project header's training function: its own autocast scope, a backward and a step.
#pragma once
#include <torch/torch.h>
inline torch::Tensor train_once(torch::nn::Linear &m, torch::optim::SGD &opt, const torch::Tensor &x) {
  at::autocast::set_enabled(true);
  torch::Tensor loss = m->forward(x).sum();
  at::autocast::set_enabled(false);
  loss.backward();
  opt.step();
  return loss;
}
