// Mock of the runtime's libtorch binding (runtime/torch/include/amp/torch.h): the names migrated
// code calls, with the same namespaces and signatures, declarations only. Lets lit tests run the
// tool over already-migrated code (idempotence).
#pragma once
#include <torch/torch.h>
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

namespace amp {
enum class Level { O0, O1, O2, O3 };

namespace mock_detail {
template <class H> auto &moduleOf(H &h) { return *h; } // ModuleHolder, shared_ptr
template <class M> M &moduleOf(std::reference_wrapper<M> &h) { return h.get(); }
} // namespace mock_detail

template <class Handle> class MixedPrecisionModel {
public:
  /// Returns what the module's forward returns (a tuple stays a tuple), as in the runtime.
  template <class... Args>
  auto forward(Args &&...args)
      -> decltype(mock_detail::moduleOf(std::declval<Handle &>()).forward(std::forward<Args>(args)...));
  template <class... Args> torch::Tensor operator()(Args &&...args);
  MixedPrecisionModel *operator->();
};
template <class Impl>
MixedPrecisionModel<torch::nn::ModuleHolder<Impl>>
auto_mixed_precision(const torch::nn::ModuleHolder<Impl> &model, Level level);
template <class M>
MixedPrecisionModel<std::shared_ptr<M>> auto_mixed_precision(const std::shared_ptr<M> &model,
                                                             Level level);

/// Non-owning (a `torch::nn::Module&`, e.g. `*this`).
template <class M, std::enable_if_t<std::is_base_of_v<torch::nn::Module, M>, int> = 0>
MixedPrecisionModel<std::reference_wrapper<M>> auto_mixed_precision(M &model, Level level);

torch::Tensor cast_to_adapter_tensor(const torch::Tensor &x);
/// Tuples and other structures of tensors keep their type, as in the runtime (fuzz-mutate found a
/// migrated structured-binding forward that the mock did not accept).
template <class T> std::decay_t<T> cast_to_adapter_tensor(T &&x);

template <class Fn> class ValueAndGrad {
public:
  ValueAndGrad(Fn fn, std::vector<torch::Tensor> params)
      : fn_(std::move(fn)), params_(std::move(params)) {}
  template <class... Args>
  std::pair<torch::Tensor, std::vector<torch::Tensor>> operator()(Args &&...args) {
    torch::Tensor value = fn_(std::forward<Args>(args)...);
    return {value.detach(), params_};
  }

private:
  Fn fn_;
  std::vector<torch::Tensor> params_;
};
template <class Fn>
ValueAndGrad<std::decay_t<Fn>> value_and_grad(Fn &&fn, std::vector<torch::Tensor> params) {
  return {std::forward<Fn>(fn), std::move(params)};
}
void accumulate_grads(std::vector<torch::Tensor> &acc, const std::vector<torch::Tensor> &micro);
template <class... Opts> std::vector<torch::Tensor> parameters_of(Opts &...optimizers);
template <class... Opts>
std::array<std::vector<torch::Tensor>, sizeof...(Opts)> split_grads(const std::vector<torch::Tensor> &grads,
                                                                     Opts &...optimizers);

torch::Tensor global_norm(const std::vector<torch::Tensor> &xs);
std::vector<torch::Tensor> clip_by_global_norm(const std::vector<torch::Tensor> &xs,
                                               double clip_norm);

class GradScalerOptions {
public:
  GradScalerOptions &init_scale(double v);
  GradScalerOptions &growth_factor(double v);
  GradScalerOptions &backoff_factor(double v);
  GradScalerOptions &growth_interval(std::int64_t v);
  GradScalerOptions &enabled(bool v);
};

class GradScaler {
public:
  explicit GradScaler(GradScalerOptions options = GradScalerOptions());
  torch::Tensor scale(const torch::Tensor &t);
  void unscale_(torch::optim::Optimizer &optimizer, const std::vector<torch::Tensor> &grads);
  void step(torch::optim::Optimizer &optimizer, const std::vector<torch::Tensor> &grads);
  template <class P> void unscale_(const P &optimizer, const std::vector<torch::Tensor> &grads);
  template <class P> void step(const P &optimizer, const std::vector<torch::Tensor> &grads);
  void update();
  void update(double new_scale);
  double get_scale() const;
};
} // namespace amp
