// Mock of the runtime's libtorch binding (runtime/torch/include/amp/torch.h): the names migrated
// code calls, with the same namespaces and signatures, declarations only. Lets lit tests run the
// tool over already-migrated code (idempotence).
#pragma once
#include <map>
#include <string>
#include <optional>
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

/// The module a handle holds (as the binding's MixedPrecisionModel sees it).
template <class Handle> struct module_of;
template <class Impl> struct module_of<torch::nn::ModuleHolder<Impl>> { using type = Impl; };
template <class M> struct module_of<std::shared_ptr<M>> { using type = M; };
template <class M> struct module_of<std::reference_wrapper<M>> { using type = M; };

template <class Handle> class MixedPrecisionModel {
public:
  // As the binding: the module's own forward, whatever it returns (tensors come back fp32).
  // Const, as the binding: a lambda's by-copy capture of the converted model can call it.
  template <class... Args>
  auto forward(Args &&...args) const
      -> decltype(std::declval<typename module_of<Handle>::type &>().forward(std::forward<Args>(args)...));
  template <class... Args>
  auto operator()(Args &&...args) const
      -> decltype(std::declval<typename module_of<Handle>::type &>().forward(std::forward<Args>(args)...));
  MixedPrecisionModel *operator->();
  const MixedPrecisionModel *operator->() const;
};
template <class Impl>
MixedPrecisionModel<torch::nn::ModuleHolder<Impl>>
auto_mixed_precision(const torch::nn::ModuleHolder<Impl> &model, Level level,
                     std::optional<c10::ScalarType> dtype = std::nullopt,
                     std::optional<c10::DeviceType> device_type = std::nullopt);
template <class M>
MixedPrecisionModel<std::shared_ptr<M>> auto_mixed_precision(const std::shared_ptr<M> &model,
                                                             Level level,
                                                             std::optional<c10::ScalarType> dtype = std::nullopt,
                                                             std::optional<c10::DeviceType> device_type = std::nullopt);

/// Non-owning (a `torch::nn::Module&`, e.g. `*this`).
template <class M, std::enable_if_t<std::is_base_of_v<torch::nn::Module, M>, int> = 0>
MixedPrecisionModel<std::reference_wrapper<M>> auto_mixed_precision(M &model, Level level,
                                                                    std::optional<c10::ScalarType> dtype = std::nullopt,
                                                                    std::optional<c10::DeviceType> device_type = std::nullopt);
/// Mixed precision on one device type only (the default dtype).
template <class Model> auto auto_mixed_precision(Model &&model, Level level, c10::DeviceType device_type)
    -> decltype(auto_mixed_precision(std::forward<Model>(model), level, std::nullopt, device_type));

torch::Tensor cast_to_adapter_tensor(const torch::Tensor &x);
template <class... Ts> std::tuple<Ts...> cast_to_adapter_tensor(const std::tuple<Ts...> &x);
template <class A, class B> std::pair<A, B> cast_to_adapter_tensor(const std::pair<A, B> &x);
std::vector<torch::Tensor> cast_to_adapter_tensor(const std::vector<torch::Tensor> &x);
/// An aggregate result (the real header maps its fields; the tool emits it only for aggregates).
template <class T, class = std::enable_if_t<std::is_aggregate_v<T>>> T cast_to_adapter_tensor(const T &x);

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

// The optimizer's step on explicit grads, without a scaler (the binding's amp::step).
void step(torch::optim::Optimizer &optimizer, const std::vector<torch::Tensor> &grads);
template <class P, class = decltype(static_cast<torch::optim::Optimizer &>(*std::declval<P>()))>
void step(const P &optimizer, const std::vector<torch::Tensor> &grads);

torch::Tensor global_norm(const std::vector<torch::Tensor> &xs);
// The binding takes an amp::ProcessGroupRef made from the caller's c10::intrusive_ptr group.
template <class Group>
void all_reduce_grads(const std::vector<torch::Tensor> &grads, const Group &process_group,
                      bool average = true);
std::vector<torch::Tensor> clip_by_global_norm(const std::vector<torch::Tensor> &xs,
                                               double clip_norm);
// In place; returns the norm before clipping (a 0-dim tensor).
torch::Tensor clip_by_global_norm_(std::vector<torch::Tensor> &xs, double clip_norm);
void clip_by_value_(const std::vector<torch::Tensor> &xs, double clip_value);
// Fails unless the optimizer holds every trainable tensor of params (before a migrated clip).
void check_holds(torch::optim::Optimizer &optimizer, const std::vector<torch::Tensor> &params);
template <class P, class = decltype(static_cast<torch::optim::Optimizer &>(*std::declval<P>()))>
void check_holds(const P &optimizer, const std::vector<torch::Tensor> &params);

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
  /// Unscales like unscale_ and answers whether every grad was finite (the checked unscale).
  bool unscale_and_check(torch::optim::Optimizer &optimizer, const std::vector<torch::Tensor> &grads);
  template <class P> bool unscale_and_check(const P &optimizer, const std::vector<torch::Tensor> &grads);
  void update();
  void update(double new_scale);
  double get_scale() const;
  bool is_enabled() const;
  std::map<std::string, double> state_dict() const;
  void load_state_dict(const std::map<std::string, double> &state);
};
} // namespace amp
