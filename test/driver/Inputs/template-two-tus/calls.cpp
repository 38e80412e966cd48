// Instantiates train_step with a model.
#include "trainer.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

float run(Net &net, torch::optim::SGD &opt, const torch::Tensor &x) { return train_step(net, opt, x); }
