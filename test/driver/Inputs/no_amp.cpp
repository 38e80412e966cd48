#include <torch/torch.h>
torch::Tensor plain(const torch::Tensor &x) { return torch::relu(x); }
