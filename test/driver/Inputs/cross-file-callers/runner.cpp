#include <torch/torch.h>
#include "runner.h"

torch::Tensor Runner::forward_and_loss(const torch::Tensor &x, const torch::Tensor &y) {
  at::autocast::set_enabled(true);
  auto loss = torch::nll_loss(model->forward(x), y);
  at::autocast::set_enabled(false);
  return loss;
}

double Runner::evaluate(const torch::Tensor &x, const torch::Tensor &y) {
  return forward_and_loss(x, y).item<double>();
}
