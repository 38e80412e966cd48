#include "net.h"

torch::Tensor HalfNetImpl::forward(const torch::Tensor &x) {
  at::autocast::set_enabled(true);
  return x * 2;
}
