#include <torch/torch.h>
#include "guard_def.h"
#include "touch_all.h"
#include "scaler.h"

// The canonical step, and a call of touch_all() that compiles only while header bodies are
// skipped: a full parse fails (NoRefresh has no refresh()).
struct NoRefresh {};
void poke() { NoRefresh n; touch_all(n); }

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void train(int epochs, double max_norm) {
  Net model;
  model->train();
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01));
  torch::amp::GradScaler scaler;
  torch::Tensor data, target;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    optimizer.zero_grad();
    torch::Tensor loss;
    {
      at::autocast::set_enabled(true);
      auto output = model->forward(data);
      loss = torch::nll_loss(output, target);
      at::autocast::clear_cache();
      at::autocast::set_enabled(false);
    }
    scaler.scale(loss).backward();
    scaler.unscale_(optimizer);
    torch::nn::utils::clip_grad_norm_(model->parameters(), max_norm);
    scaler.step(optimizer);
    scaler.update();
    float l = loss.item<float>();
    (void)l;
  }
}
