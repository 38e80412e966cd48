#include "net.h"

torch::Tensor NetImpl::forward(const torch::Tensor &x) { return x * 2; }
