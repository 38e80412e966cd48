// Shared by the e2e before- and after-programs: synthetic data, small models and the log format
// the harness compares ("step <i> loss <v>", "params_fp32 <0|1>"). No AMP code lives here.
#pragma once

#include <torch/torch.h>

#include <cstdio>
#include <vector>

namespace e2e {

constexpr int kSteps = 40;
constexpr int kBatch = 32;
constexpr int kInputs = 32;
constexpr int kClasses = 10;

/// 512 points labelled by a fixed random linear teacher; batch i is a fixed slice.
class SyntheticData {
public:
  SyntheticData() {
    torch::manual_seed(1234);
    inputs_ = torch::randn({512, kInputs});
    auto teacher = torch::randn({kInputs, kClasses});
    targets_ = inputs_.matmul(teacher).argmax(1);
  }
  torch::Tensor input(int step) const { return inputs_.narrow(0, (step * kBatch) % 512, kBatch); }
  torch::Tensor target(int step) const {
    return targets_.narrow(0, (step * kBatch) % 512, kBatch);
  }

private:
  torch::Tensor inputs_, targets_;
};

struct MlpImpl : torch::nn::Module {
  MlpImpl(bool batch_norm = false) {
    fc1 = register_module("fc1", torch::nn::Linear(kInputs, 64));
    fc2 = register_module("fc2", torch::nn::Linear(64, 64));
    fc3 = register_module("fc3", torch::nn::Linear(64, kClasses));
    if (batch_norm)
      bn = register_module("bn", torch::nn::BatchNorm1d(64));
  }
  torch::Tensor forward(const torch::Tensor &x) {
    auto h = torch::relu(fc1->forward(x));
    if (bn)
      h = bn->forward(h);
    h = torch::relu(fc2->forward(h));
    return torch::log_softmax(fc3->forward(h), 1);
  }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
  torch::nn::BatchNorm1d bn{nullptr};
};
TORCH_MODULE(Mlp);

inline void log_step(int step, const torch::Tensor &loss) {
  std::printf("step %d loss %.6f\n", step, loss.item<double>());
}

inline void log_params(const std::vector<torch::Tensor> &params) {
  bool fp32 = true;
  for (const auto &p : params)
    fp32 = fp32 && p.scalar_type() == torch::kFloat;
  std::printf("params_fp32 %d\n", fp32 ? 1 : 0);
}

} // namespace e2e
