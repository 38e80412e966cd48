// The differential check's probe: builds the harness against the real libtorch and the runtime's
// binding, and gives run.py the exact compile and link commands CMake uses for such a program.
#include "amp_diff.h"

namespace probe {
struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x) { return amp_diff::forward(*this, x); }
};
TORCH_MODULE(Net);
void train(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &x, const torch::Tensor &y) {
  optimizer.zero_grad();
  torch::mse_loss(model->forward(x), y).backward();
  optimizer.step();
}
} // namespace probe

int main() {
  // The same function on both sides: the harness must call it the same.
  return amp_diff::check("probe:train", &probe::train, &probe::train) ? 0 : 1;
}
