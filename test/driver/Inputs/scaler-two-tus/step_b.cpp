#include "trainer.h"

void Trainer::step_b(torch::optim::SGD &opt, const torch::Tensor &x, const torch::Tensor &y) {
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    loss = torch::nll_loss(model->forward(x), y);
    at::autocast::set_enabled(false);
  }
  scaler->scale(loss).backward();
  scaler->step(opt);
  scaler->update();
}
