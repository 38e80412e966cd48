// A step that calls a project helper (grad_helper.h) touching .grad between backward and step().
#include <torch/torch.h>
#include "scaler.h"
#include "grad_helper.h"
struct NetImpl : torch::nn::Module { torch::Tensor forward(const torch::Tensor &x); };
TORCH_MODULE(Net);
void train(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler, Holder &h, const torch::Tensor &x) {
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    loss = model->forward(x).sum();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  h.halve();
  scaler.step(opt);
  scaler.update();
}
