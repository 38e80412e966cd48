// The shape of the most copied C++ port of Python's GradScaler: scale() is a template over what
// it scales (a tensor, or a list of them), so only an instantiation says it returns a tensor.
#pragma once
#include <ATen/ATen.h>
#include <torch/optim/optimizer.h>
#include <type_traits>
#include <vector>

namespace port {
class GradScaler {
public:
  explicit GradScaler(double init_scale = 65536.0, double growth_factor = 2.0,
                      double backoff_factor = 0.5, int64_t growth_interval = 2000,
                      bool enabled = true)
      : scale_(init_scale), growth_factor_(growth_factor), backoff_factor_(backoff_factor),
        growth_interval_(growth_interval), enabled_(enabled) {}

  template <typename T>
  auto scale(T const &outputs) {
    if constexpr (std::is_same_v<T, at::Tensor>) {
      return enabled_ ? outputs * scale_ : outputs;
    } else {
      std::vector<at::Tensor> scaled;
      for (const at::Tensor &o : outputs)
        scaled.push_back(enabled_ ? o * scale_ : o);
      return scaled;
    }
  }

  void unscale_(torch::optim::Optimizer &optimizer) {
    for (auto &group : optimizer.param_groups())
      for (auto &p : group.params())
        if (p.grad().defined())
          p.mutable_grad().div_(scale_);
  }
  void step(torch::optim::Optimizer &optimizer) {
    unscale_(optimizer);
    optimizer.step();
  }
  void update() { growth_tracker_ = (growth_tracker_ + 1) % growth_interval_; }
  double get_scale() const { return scale_; }

private:
  double scale_, growth_factor_, backoff_factor_;
  int64_t growth_interval_, growth_tracker_ = 0;
  bool enabled_;
};

/// The variant returning T, with an overload for a list of tensors.
class TypedScaler {
public:
  template <typename T> T scale(T const &outputs) { return outputs * 2.0; }
  std::vector<at::Tensor> scale(const std::vector<at::Tensor> &outputs) { return outputs; }
  void unscale_(torch::optim::Optimizer &optimizer) {
    for (auto &p : optimizer.parameters())
      if (p.grad().defined())
        p.mutable_grad().div_(2.0);
  }
  void step(torch::optim::Optimizer &optimizer) { optimizer.step(); }
  void update() {}
};
} // namespace port
