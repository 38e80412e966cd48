// Shared by the e2e before- and after-programs: synthetic data, small models and the log format
// the harness compares ("step <i> loss <v>", "step <i> params <hash>", "params_fp32 <0|1>").
// No AMP code lives here.
#pragma once

#include <torch/torch.h>

#include <cstdint>
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

/// "step <i> scale <s>": the loss scale after the step, which compare.py requires to be the same
/// in the original and the migrated program, step by step.
inline void log_scale(int step, double scale) { std::printf("step %d scale %.9g\n", step, scale); }

/// "step <i> params <hash>": an FNV-1a hash of every parameter's bytes, so that the harness can
/// check that data-parallel ranks hold bit-identical parameters after each step.
inline void log_param_digest(int step, const std::vector<torch::Tensor> &params) {
  std::uint64_t h = 1469598103934665603ull;
  for (const auto &p : params) {
    auto t = p.detach().contiguous().cpu();
    const auto *bytes = static_cast<const unsigned char *>(t.data_ptr());
    for (std::size_t i = 0, n = t.numel() * t.element_size(); i < n; ++i)
      h = (h ^ bytes[i]) * 1099511628211ull;
  }
  std::printf("step %d params %016llx\n", step, static_cast<unsigned long long>(h));
}

inline void log_params(const std::vector<torch::Tensor> &params) {
  bool fp32 = true;
  for (const auto &p : params)
    fp32 = fp32 && p.scalar_type() == torch::kFloat;
  std::printf("params_fp32 %d\n", fp32 ? 1 : 0);
}

} // namespace e2e
