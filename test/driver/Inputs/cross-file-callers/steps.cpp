#include <torch/torch.h>
#include "losses.h"
#include "runner.h"

void step_elsewhere(Net &model, torch::optim::SGD &opt, LossComputer &losses, const torch::Tensor &x,
                    const torch::Tensor &y) {
  opt.zero_grad();
  at::autocast::set_enabled(true);
  auto loss = losses.compute(model->forward(x), y);
  at::autocast::set_enabled(false);
  opt.step();
}
