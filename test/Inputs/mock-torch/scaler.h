// A typical user port of Python's GradScaler (what projects write themselves).
#pragma once
#include <torch/torch.h>
#include <memory>

namespace torch { namespace amp {
class GradScaler {
public:
  explicit GradScaler(double init_scale = 65536.0, double growth_factor = 2.0,
                      double backoff_factor = 0.5, int64_t growth_interval = 2000,
                      bool enabled = true);
  torch::Tensor scale(const torch::Tensor &outputs);
  void unscale_(torch::optim::Optimizer &optimizer);
  void step(torch::optim::Optimizer &optimizer);
  void update();
  void update(double new_scale);
  double get_scale() const;
  bool is_enabled() const;
};
}} // namespace torch::amp
