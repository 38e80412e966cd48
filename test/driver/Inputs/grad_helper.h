#pragma once
// A project helper that touches .grad and names no AMP token (its body is kept on the fast path).
#include <torch/torch.h>
struct Holder {
  std::vector<torch::Tensor> params;
  void halve() {
    for (auto &p : params)
      p.grad().mul_(0.5);
  }
};
