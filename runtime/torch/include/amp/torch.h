// libtorch binding of the amp runtime: what migrated training code calls (auto_mixed_precision,
// value_and_grad, GradScaler, clip_by_global_norm), dispatching the list math to the runtime core.
//
// The design and every difference from MindSpore / PyTorch are documented in docs/runtime.md.
#pragma once

#include <torch/autograd.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/optim/optimizer.h>

#include <amp/runtime.h>

// AMP_TORCH_DISTRIBUTED (set to 1 or 0 by amp::torch's CMake, by whether the library was built with
// c10d): the collectives below. Compiled without that definition (amp-migrate's verification parse
// of migrated code, or the headers used alone), they are declared when libtorch has c10d.
#ifndef AMP_TORCH_DISTRIBUTED
#if __has_include(<torch/csrc/distributed/c10d/ProcessGroup.hpp>)
#define AMP_TORCH_DISTRIBUTED 1
#endif
#endif
#if AMP_TORCH_DISTRIBUTED
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#if __has_include(<torch/csrc/distributed/c10d/Backend.hpp>)
#include <torch/csrc/distributed/c10d/Backend.hpp>
#define AMP_TORCH_C10D_BACKEND 1
#endif
#endif

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace amp {

// ---- levels ------------------------------------------------------------------------------------
/// MindSpore's mixed-precision levels as this binding realises them (see docs/runtime.md):
/// O0 unchanged; O1 the framework's autocast policy during forward; O2 low-precision parameters
/// and inputs with norm layers in fp32; O3 everything low precision. O1-O3 return fp32 outputs.
enum class Level { O0, O1, O2, O3 };

/// "O0".."O3" (also "o2"); anything else throws amp::Error naming the valid levels.
Level parse_level(const std::string &name);
const char *level_name(Level level);

namespace detail {

/// Per-module conversion record shared by every converted handle of one module (defined in the
/// binding's sources; the header only passes it around).
struct ConversionState;

/// Looks up or creates the conversion of `module` (idempotent per Module*). `owner` keeps the
/// module alive when the caller handed over ownership; null for non-owning conversions.
/// `device_type`: the level applies where the module is on that device type, and O0 elsewhere.
std::shared_ptr<ConversionState> convert(torch::nn::Module &module,
                                         std::shared_ptr<torch::nn::Module> owner, Level level,
                                         std::optional<torch::Dtype> dtype,
                                         std::optional<torch::DeviceType> device_type = std::nullopt);
Level level_of(const ConversionState &state);

/// The level's policy for the length of one forward call: autocast on (O1, O2), low-precision
/// parameter copies swapped in (O2, O3), inputs and outputs cast.
class ForwardScope {
public:
  explicit ForwardScope(ConversionState &state);
  ~ForwardScope();
  ForwardScope(const ForwardScope &) = delete;
  ForwardScope &operator=(const ForwardScope &) = delete;

  torch::Tensor input(const torch::Tensor &t) const;
  torch::Tensor output(const torch::Tensor &t) const;

private:
  ConversionState &state_;
  std::optional<torch::Dtype> input_dtype_;
  bool cast_outputs_ = false;
  bool autocast_ = false;
  bool restore_after_forward_ = false;
  bool autocast_was_enabled_ = false;
  torch::Dtype autocast_previous_dtype_ = torch::kFloat;
  torch::DeviceType autocast_device_ = torch::kCPU;
};

/// Puts the fp32 masters back into every module whose low-precision copies are swapped in, and
/// makes any `.grad` accumulated on the copies fp32. Called by value_and_grad after the backward
/// pass and by GradScaler before it touches an optimizer.
void restore_masters();

template <class T> struct is_tensor : std::is_same<std::decay_t<T>, torch::Tensor> {};

template <class T> decltype(auto) cast_input(const ForwardScope &scope, T &&x) {
  if constexpr (is_tensor<T>::value) {
    return scope.input(x);
  } else if constexpr (std::is_same_v<std::decay_t<T>, std::vector<torch::Tensor>>) {
    std::vector<torch::Tensor> out;
    out.reserve(x.size());
    for (const auto &t : x) out.push_back(scope.input(t));
    return out;
  } else {
    return std::forward<T>(x);
  }
}

template <class T> struct is_tuple_like : std::false_type {};
template <class... Ts> struct is_tuple_like<std::tuple<Ts...>> : std::true_type {};
template <class A, class B> struct is_tuple_like<std::pair<A, B>> : std::true_type {};

/// Applies `f` to every tensor in a tensor, tuple, pair or vector of tensors (nested); anything
/// else is returned unchanged. The result has the input's type.
template <class T, class F> std::decay_t<T> map_tensors(T &&value, const F &f) {
  using V = std::decay_t<T>;
  if constexpr (std::is_same_v<V, torch::Tensor>) {
    return f(value);
  } else if constexpr (std::is_same_v<V, std::vector<torch::Tensor>>) {
    V out;
    out.reserve(value.size());
    for (const auto &t : value) out.push_back(f(t));
    return out;
  } else if constexpr (is_tuple_like<V>::value) {
    return std::apply(
        [&f](auto &&...elems) { return V(map_tensors(std::forward<decltype(elems)>(elems), f)...); },
        std::forward<T>(value));
  } else {
    return std::forward<T>(value);
  }
}

/// A forward's aggregate result (`struct Output { torch::Tensor logits, aux_loss; };`): its fields,
/// counted by brace initialisation and reached by a structured binding. For aggregates without
/// base classes whose fields are tensors, vectors or tuples of them, or scalars (a field that is
/// itself an aggregate or an array would take several initialisers and be miscounted); up to 12.
struct any_field {
  template <class T> operator T() const; // unevaluated only
};
template <class V, class Seq, class = void> struct brace_init_with : std::false_type {};
template <class V, std::size_t... I>
struct brace_init_with<V, std::index_sequence<I...>,
                       std::void_t<decltype(V{(void(I), any_field{})...})>> : std::true_type {};
inline constexpr std::size_t max_aggregate_fields = 12;
template <class V, std::size_t N = 0> constexpr std::size_t aggregate_fields() {
  if constexpr (N > max_aggregate_fields) {
    return N;
  } else if constexpr (brace_init_with<V, std::make_index_sequence<N + 1>>::value) {
    return aggregate_fields<V, N + 1>();
  } else {
    return N;
  }
}
template <class V>
inline constexpr bool is_field_aggregate =
    std::is_class_v<V> && std::is_aggregate_v<V> && !std::is_empty_v<V>;

/// `V{f(a), f(b), ...}` from references to an aggregate's fields.
template <class V, class F, class Fields> V rebuild_aggregate(const F &f, const Fields &fields) {
  return std::apply([&f](const auto &...x) { return V{map_tensors(x, f)...}; }, fields);
}

#define AMP_DETAIL_MAP_FIELDS(N, ...)                                                              \
  if constexpr (n == N) {                                                                          \
    const auto &[__VA_ARGS__] = value;                                                             \
    return rebuild_aggregate<V>(f, std::tie(__VA_ARGS__));                                         \
  } else

/// Maps `f` over the fields of an aggregate (see aggregate_fields); one case per field count,
/// since a structured binding names every field.
template <class V, class F> V map_aggregate(const V &value, const F &f) {
  constexpr std::size_t n = aggregate_fields<V>();
  static_assert(n >= 1 && n <= max_aggregate_fields,
                "amp::cast_to_adapter_tensor: an aggregate of 1 to 12 fields");
  AMP_DETAIL_MAP_FIELDS(1, a1)
  AMP_DETAIL_MAP_FIELDS(2, a1, a2)
  AMP_DETAIL_MAP_FIELDS(3, a1, a2, a3)
  AMP_DETAIL_MAP_FIELDS(4, a1, a2, a3, a4)
  AMP_DETAIL_MAP_FIELDS(5, a1, a2, a3, a4, a5)
  AMP_DETAIL_MAP_FIELDS(6, a1, a2, a3, a4, a5, a6)
  AMP_DETAIL_MAP_FIELDS(7, a1, a2, a3, a4, a5, a6, a7)
  AMP_DETAIL_MAP_FIELDS(8, a1, a2, a3, a4, a5, a6, a7, a8)
  AMP_DETAIL_MAP_FIELDS(9, a1, a2, a3, a4, a5, a6, a7, a8, a9)
  AMP_DETAIL_MAP_FIELDS(10, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10)
  AMP_DETAIL_MAP_FIELDS(11, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11)
  AMP_DETAIL_MAP_FIELDS(12, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12)
  return value;
}
#undef AMP_DETAIL_MAP_FIELDS

template <class H> auto &module_of(const std::shared_ptr<H> &h) { return *h; }
template <class H> H &module_of(const torch::nn::ModuleHolder<H> &h) { return *h.ptr(); }
template <class M> M &module_of(const std::reference_wrapper<M> &r) { return r.get(); }

} // namespace detail

/// What auto_mixed_precision returns: callable like the original (`->forward(...)`, `(...)`,
/// `.forward(...)`), running each call under the level's policy. Copies share one state.
/// `Handle` is how the original was passed: std::shared_ptr<M>, a ModuleHolder, or
/// std::reference_wrapper<M> for a non-owning conversion of a `torch::nn::Module&`.
template <class Handle> class MixedPrecisionModel {
public:
  MixedPrecisionModel(Handle original, std::shared_ptr<detail::ConversionState> state)
      : original_(std::move(original)), state_(std::move(state)) {}

  /// Const: the handle is not the module (a lambda that captured the converted model by copy
  /// calls it from its const call operator); the module's own forward runs non-const.
  template <class... Args> auto forward(Args &&...args) const {
    detail::ForwardScope scope(*state_);
    return detail::map_tensors(
        impl().forward(detail::cast_input(scope, std::forward<Args>(args))...),
        [&scope](const torch::Tensor &t) { return scope.output(t); });
  }
  template <class... Args> auto operator()(Args &&...args) const {
    return forward(std::forward<Args>(args)...);
  }
  /// So that code written for module handles (`model->forward(x)`) works unchanged.
  MixedPrecisionModel *operator->() { return this; }
  const MixedPrecisionModel *operator->() const { return this; }

  /// The original model (the handle it was converted from; a reference for non-owning ones).
  decltype(auto) module() const {
    if constexpr (is_reference_handle) {
      return original_.get();
    } else {
      return (original_);
    }
  }
  Level level() const { return detail::level_of(*state_); }

private:
  template <class T> struct is_reference_wrapper : std::false_type {};
  template <class T> struct is_reference_wrapper<std::reference_wrapper<T>> : std::true_type {};
  static constexpr bool is_reference_handle = is_reference_wrapper<Handle>::value;

  auto &impl() const { return detail::module_of(original_); }

  Handle original_;
  std::shared_ptr<detail::ConversionState> state_;
};

/// Converts `model` to `level`. Idempotent per module object: converting the same module again
/// returns a handle to the same conversion (a different level, dtype or device type for it
/// throws). `dtype` picks the low-precision type (default: fp16 on CUDA, bf16 on the CPU).
/// `device_type` limits mixed precision to a model on that device type, as an autocast scope of
/// one device type did (`at::autocast::set_enabled(true)` is CUDA's: a model left on the CPU, a
/// CUDA program's fallback, trained in fp32): on another device the conversion is O0.
template <class M>
MixedPrecisionModel<std::shared_ptr<M>>
auto_mixed_precision(const std::shared_ptr<M> &model, Level level,
                     std::optional<torch::Dtype> dtype = std::nullopt,
                     std::optional<torch::DeviceType> device_type = std::nullopt) {
  static_assert(std::is_base_of_v<torch::nn::Module, M>, "expects a torch::nn::Module");
  auto state = detail::convert(*model, model, level, dtype, device_type);
  return {model, std::move(state)};
}

template <class Impl>
MixedPrecisionModel<torch::nn::ModuleHolder<Impl>>
auto_mixed_precision(const torch::nn::ModuleHolder<Impl> &model, Level level,
                     std::optional<torch::Dtype> dtype = std::nullopt,
                     std::optional<torch::DeviceType> device_type = std::nullopt) {
  auto state = detail::convert(*model.ptr(), model.ptr(), level, dtype, device_type);
  return {model, std::move(state)};
}

/// Non-owning: the module must outlive the returned handle (e.g. `*this` inside a module).
template <class M, std::enable_if_t<std::is_base_of_v<torch::nn::Module, M>, int> = 0>
MixedPrecisionModel<std::reference_wrapper<M>>
auto_mixed_precision(M &model, Level level, std::optional<torch::Dtype> dtype = std::nullopt,
                     std::optional<torch::DeviceType> device_type = std::nullopt) {
  auto state = detail::convert(model, nullptr, level, dtype, device_type);
  return {std::ref(model), std::move(state)};
}

/// `auto_mixed_precision(model, Level::O1, torch::kCUDA)`: the default dtype, one device type.
template <class Model>
auto auto_mixed_precision(Model &&model, Level level, torch::DeviceType device_type) {
  return auto_mixed_precision(std::forward<Model>(model), level, std::nullopt, device_type);
}

/// The level by name ("O1"), then the same arguments as above.
template <class Model, class... Rest>
auto auto_mixed_precision(Model &&model, const std::string &level, Rest &&...rest) {
  return auto_mixed_precision(std::forward<Model>(model), parse_level(level),
                              std::forward<Rest>(rest)...);
}
template <class Model, class... Rest>
auto auto_mixed_precision(Model &&model, const char *level, Rest &&...rest) {
  return auto_mixed_precision(std::forward<Model>(model), parse_level(level),
                              std::forward<Rest>(rest)...);
}

// ---- tensors back to fp32 ------------------------------------------------------------------------
/// fp16/bf16 tensors become fp32 copies; other tensors are returned as they are. Also for tuples,
/// pairs and vectors of tensors, and for a forward's aggregate result (`struct Output {
/// torch::Tensor logits, aux; }`, fields: tensors, vectors or tuples of them, scalars; no base
/// classes, no aggregate or array fields; up to 12).
torch::Tensor cast_to_adapter_tensor(const torch::Tensor &x);
template <class T> std::decay_t<T> cast_to_adapter_tensor(T &&x) {
  auto cast = [](const torch::Tensor &t) { return cast_to_adapter_tensor(t); };
  using V = std::decay_t<T>;
  if constexpr (detail::is_field_aggregate<V> && !detail::is_tuple_like<V>::value)
    return detail::map_aggregate(static_cast<const V &>(x), cast);
  else
    return detail::map_tensors(std::forward<T>(x), cast);
}

// ---- explicit gradients --------------------------------------------------------------------------
namespace detail {
/// d value / d params through autograd, leaving every `.grad` alone; puts masters back first.
/// Unused parameters get zeros; grads come back in the parameters' own dtype (fp32 masters). A
/// value that does not require grad (no graph at all) is an amp::Error unless every parameter is
/// frozen.
std::vector<torch::Tensor> grads_of(const torch::Tensor &value,
                                    const std::vector<torch::Tensor> &params);

/// Puts masters back if the function throws before grads_of ran.
class GradScope {
public:
  GradScope();
  ~GradScope();
  GradScope(const GradScope &) = delete;
  GradScope &operator=(const GradScope &) = delete;
};
} // namespace detail

template <class Fn> class ValueAndGrad {
public:
  ValueAndGrad(Fn fn, std::vector<torch::Tensor> params)
      : fn_(std::move(fn)), params_(std::move(params)) {}

  /// Returns {value of fn (detached), grads of it w.r.t. the parameters}.
  template <class... Args>
  std::pair<torch::Tensor, std::vector<torch::Tensor>> operator()(Args &&...args) {
    detail::GradScope scope;
    torch::AutoGradMode grad_mode(true);
    torch::Tensor value = fn_(std::forward<Args>(args)...);
    auto grads = detail::grads_of(value, params_);
    return {value.detach(), std::move(grads)};
  }

  const std::vector<torch::Tensor> &parameters() const { return params_; }

private:
  Fn fn_;
  std::vector<torch::Tensor> params_;
};

/// MindSpore's value_and_grad for libtorch: `auto [value, grads] = value_and_grad(fn, params)(args...)`.
template <class Fn> ValueAndGrad<std::decay_t<Fn>> value_and_grad(Fn &&fn,
                                                                    std::vector<torch::Tensor> params) {
  return {std::forward<Fn>(fn), std::move(params)};
}

/// The CPU step cache: value_and_grad's forward and backward take their large CPU blocks (128 KiB
/// and more: activations, O1's bf16 copies, the grads it returns) from a cache that gets them back
/// when they are freed, so that a steady loop stops returning memory to the system and faulting
/// it in again every step (docs/runtime.md, "The CPU step cache"). On by default; the environment
/// variable AMP_CPU_STEP_CACHE=0 keeps it from being installed. A block no step asked for in the
/// last two steps is freed when the next one begins.
struct CpuStepCacheStats {
  std::size_t cached_bytes = 0;    ///< freed blocks kept for the next step
  std::size_t live_bytes = 0;      ///< blocks of the cache in use
  std::size_t peak_live_bytes = 0; ///< the most in use at once
  std::size_t hits = 0, misses = 0;
};
CpuStepCacheStats cpu_step_cache_stats();
/// Frees every cached block (before an evaluation phase, say); the cache refills in the next steps.
void empty_cpu_step_cache();
/// Off: no new block is cached and the cached ones are freed (blocks in use are freed when released).
void set_cpu_step_cache_enabled(bool on);

/// Gradient accumulation over micro-steps: an empty `acc` becomes `micro`, otherwise
/// acc[i] += micro[i] in place. The lists must pair up and each pair have one shape (add_ would
/// broadcast); otherwise amp::Error, before anything is added.
void accumulate_grads(std::vector<torch::Tensor> &acc, const std::vector<torch::Tensor> &micro);

// ---- several optimizers, one loss -----------------------------------------------------------------
namespace detail {
/// An optimizer given as itself or through a pointer (std::shared_ptr, std::unique_ptr, raw).
template <class O> torch::optim::Optimizer &as_optimizer(O &o) {
  if constexpr (std::is_base_of_v<torch::optim::Optimizer, std::decay_t<O>>)
    return o;
  else
    return static_cast<torch::optim::Optimizer &>(*o);
}
/// Every parameter of every group of the optimizer, in order.
std::vector<torch::Tensor> all_parameters(torch::optim::Optimizer &optimizer);
/// split_grads' amp::Error: the grads do not pair up with the optimizers' parameters.
[[noreturn]] void split_grads_mismatch(std::size_t grads, std::size_t parameters);
} // namespace detail

/// The parameters of several optimizers as one list, for value_and_grad when one loss drives
/// several optimizers that share a scaler (each optimizer's groups in order, then the next's).
template <class... Opts> std::vector<torch::Tensor> parameters_of(Opts &...optimizers) {
  static_assert(sizeof...(Opts) > 0, "amp::parameters_of needs at least one optimizer");
  std::vector<torch::Tensor> out;
  for (auto &&list : {detail::all_parameters(detail::as_optimizer(optimizers))...})
    out.insert(out.end(), list.begin(), list.end());
  return out;
}

/// Splits grads w.r.t. parameters_of(optimizers...) into one list per optimizer, in the same
/// order: `auto [grads_a, grads_b] = amp::split_grads(grads, opt_a, opt_b);`. Throws amp::Error
/// when the counts do not pair up.
template <class... Opts>
std::array<std::vector<torch::Tensor>, sizeof...(Opts)> split_grads(const std::vector<torch::Tensor> &grads,
                                                                     Opts &...optimizers) {
  std::array<std::size_t, sizeof...(Opts)> sizes{
      detail::all_parameters(detail::as_optimizer(optimizers)).size()...};
  std::size_t total = 0;
  for (std::size_t n : sizes)
    total += n;
  if (total != grads.size())
    detail::split_grads_mismatch(grads.size(), total);
  std::array<std::vector<torch::Tensor>, sizeof...(Opts)> out;
  std::size_t at = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    out[i].assign(grads.begin() + static_cast<std::ptrdiff_t>(at),
                  grads.begin() + static_cast<std::ptrdiff_t>(at + sizes[i]));
    at += sizes[i];
  }
  return out;
}

// ---- an optimizer step on explicit grads, without a scaler ----------------------------------------
/// What `optimizer.step()` did after `loss.backward()` filled `.grad`, for training with no loss
/// scaler (bf16, fp32): puts `grads` into the parameters' `.grad` (cast to each parameter's dtype
/// and device), calls optimizer.step() and puts the old `.grad` back. `grads` pair up with the
/// parameters of all groups (amp::parameters_of), or of the first group. Errors are amp::Error.
void step(torch::optim::Optimizer &optimizer, const std::vector<torch::Tensor> &grads);
/// Pointer-like optimizers: std::shared_ptr, std::unique_ptr, raw pointers.
template <class P, class = decltype(static_cast<torch::optim::Optimizer &>(*std::declval<P>()))>
void step(const P &optimizer, const std::vector<torch::Tensor> &grads) {
  step(static_cast<torch::optim::Optimizer &>(*optimizer), grads);
}

// ---- norms and clipping -----------------------------------------------------------------------
/// sqrt(sum_i sum(x_i^2)) as a 0-dim fp32 tensor on the first tensor's device (no host sync).
torch::Tensor global_norm(const std::vector<torch::Tensor> &xs);
/// Whether no element of any floating tensor is inf or NaN (undefined tensors are skipped). A host
/// answer: one host read (sync) for the whole list.
bool all_finite(const std::vector<torch::Tensor> &xs);
/// MindSpore's rule, out of place: out_i = x_i * clip_norm / max(global_norm, clip_norm).
/// clip_norm must be > 0 and finite as an fp32, the tensors floating point (amp::Error naming the
/// function called, as for clip_by_global_norm_).
std::vector<torch::Tensor> clip_by_global_norm(const std::vector<torch::Tensor> &xs,
                                               double clip_norm);
/// The same rule in place, as torch::nn::utils::clip_grad_norm_ does to `.grad`: x_i is scaled by
/// clip_norm / max(global_norm, clip_norm) where it lies. Returns the global norm before clipping
/// (0-dim fp32 on the first tensor's device, no host sync), like clip_grad_norm_'s total norm. The
/// tensors must not share memory (amp::Error: the memory would be scaled twice); value_and_grad's
/// grads never do. This is the form amp-migrate writes: no output list is allocated. A clip_norm
/// past fp32's range (+inf, the usual way to log the norm without clipping) clips nothing and
/// returns the norm, as clip_grad_norm_ does; other non-positive or NaN values are amp::Errors.
torch::Tensor clip_by_global_norm_(const std::vector<torch::Tensor> &xs, double clip_norm);
/// torch::nn::utils::clip_grad_value_ on explicit grads: every element of every defined tensor
/// clamped, in place, to [-clip_value, clip_value] (the form amp-migrate writes for it).
void clip_by_value_(const std::vector<torch::Tensor> &xs, double clip_value);

/// The precondition under which clipping an optimizer's explicit grads is the clip of `params`'
/// `.grad` that it replaces: the optimizer (every parameter group) holds every tensor of `params`
/// that requires grad. amp-migrate writes `amp::check_holds(optimizer, model->parameters());`
/// before the clip of a `clip_grad_norm_(model->parameters(), ...)` whose optimizer it cannot see
/// built (a parameter of the function): an optimizer over part of the model would otherwise clip
/// a smaller norm silently. Throws amp::Error naming how many are missing and the first one.
void check_holds(torch::optim::Optimizer &optimizer, const std::vector<torch::Tensor> &params);
template <class P, class = decltype(static_cast<torch::optim::Optimizer &>(*std::declval<P>()))>
void check_holds(const P &optimizer, const std::vector<torch::Tensor> &params) {
  check_holds(static_cast<torch::optim::Optimizer &>(*optimizer), params);
}

// ---- across ranks (docs/distributed.md) -----------------------------------------------------------
namespace detail {
/// The process group a GradScaler reduces its inf checks over (defined with the collectives).
struct Collective;
/// Which grads one unscale_ call unscaled (defined with the scaler).
struct UnscaledGrads;
} // namespace detail

#if AMP_TORCH_DISTRIBUTED
/// The caller's process group (NCCL, Gloo, ...) as the collectives take it: a
/// c10::intrusive_ptr to a c10d::ProcessGroup (libtorch 1.x's ProcessGroupGloo/NCCL) or to a
/// c10d::Backend (2.x's). Shares ownership; the runtime never creates a group of its own.
class ProcessGroupRef {
public:
  ProcessGroupRef() = default;
  template <class G, std::enable_if_t<std::is_base_of_v<c10d::ProcessGroup, G>, int> = 0>
  ProcessGroupRef(c10::intrusive_ptr<G> group) : group_(std::move(group)) {}
#if AMP_TORCH_C10D_BACKEND
  template <class G, std::enable_if_t<std::is_base_of_v<c10d::Backend, G> &&
                                          !std::is_base_of_v<c10d::ProcessGroup, G>, int> = 0>
  ProcessGroupRef(c10::intrusive_ptr<G> backend) : backend_(std::move(backend)) {}
#endif
  explicit operator bool() const;
  int rank() const;
  int size() const;
  /// Starts the collective (waiting is the caller's).
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<torch::Tensor> &tensors,
                                           const c10d::AllreduceOptions &options) const;

private:
  c10::intrusive_ptr<c10d::ProcessGroup> group_;
#if AMP_TORCH_C10D_BACKEND
  c10::intrusive_ptr<c10d::Backend> backend_;
#endif
};

/// PyTorch DDP's default bucket size.
constexpr std::size_t kDefaultBucketBytes = std::size_t{25} << 20;

/// All-reduces `grads` in place across the ranks of `process_group` (sum, then / world size when
/// `average`): the grads are packed in order into flat buckets of up to `bucket_bytes` per device
/// and dtype, one collective per bucket, all in flight before the first wait. On CUDA the
/// collectives are ordered after the current stream and the copies back wait for them on it (no
/// host sync). Every rank must pass grads of the same shapes in the same order. Errors name the
/// op, bucket and rank.
void all_reduce_grads(const std::vector<torch::Tensor> &grads, const ProcessGroupRef &process_group,
                      bool average = true, std::size_t bucket_bytes = kDefaultBucketBytes);

/// For grads sharded across ranks (each rank holds a different part): sqrt of the sum over ranks
/// of each rank's sum of squares (FSDP's clip_grad_norm_). Do not pass replicated grads (after
/// all_reduce_grads): their norm is the local global_norm(grads).
torch::Tensor global_norm(const std::vector<torch::Tensor> &xs, const ProcessGroupRef &process_group);
/// clip_by_global_norm with the norm of global_norm(xs, process_group): every rank scales its
/// shard by the same factor.
std::vector<torch::Tensor> clip_by_global_norm(const std::vector<torch::Tensor> &xs,
                                               double clip_norm,
                                               const ProcessGroupRef &process_group);
/// clip_by_global_norm_ (in place) with the norm of global_norm(xs, process_group).
torch::Tensor clip_by_global_norm_(const std::vector<torch::Tensor> &xs, double clip_norm,
                                   const ProcessGroupRef &process_group);
#endif

// ---- loss scaling -------------------------------------------------------------------------------
class GradScalerOptions {
public:
  GradScalerOptions &init_scale(double v) { init_scale_ = v; return *this; }
  GradScalerOptions &growth_factor(double v) { growth_factor_ = v; return *this; }
  GradScalerOptions &backoff_factor(double v) { backoff_factor_ = v; return *this; }
  GradScalerOptions &growth_interval(std::int64_t v) { growth_interval_ = v; return *this; }
  GradScalerOptions &enabled(bool v) { enabled_ = v; return *this; }
  double init_scale() const { return init_scale_; }
  double growth_factor() const { return growth_factor_; }
  double backoff_factor() const { return backoff_factor_; }
  std::int64_t growth_interval() const { return growth_interval_; }
  bool enabled() const { return enabled_; }
#if AMP_TORCH_DISTRIBUTED
  /// unscale_/step all-reduce the inf check with MAX over this group, so that every rank skips
  /// the step together (needed when ranks hold different grads: sharded, or reduced later).
  GradScalerOptions &process_group(ProcessGroupRef process_group);
#endif
  /// Null unless process_group() was set.
  const std::shared_ptr<const detail::Collective> &collective() const { return collective_; }

private:
  std::shared_ptr<const detail::Collective> collective_;
  double init_scale_ = 65536.0;
  double growth_factor_ = 2.0;
  double backoff_factor_ = 0.5;
  std::int64_t growth_interval_ = 2000;
  bool enabled_ = true;
};

/// PyTorch's GradScaler with explicit gradients (SEMANTICS.md). Errors are amp::Error.
class GradScaler {
public:
  explicit GradScaler(GradScalerOptions options = GradScalerOptions());

  /// t * scale, out of place (t itself when disabled).
  torch::Tensor scale(const torch::Tensor &t);
  std::vector<torch::Tensor> scale(const std::vector<torch::Tensor> &ts);

  /// Unscales `grads` in place and records inf/NaN for `optimizer` (no host sync). `grads` pair
  /// up with the parameters of all groups, or of the first group, or are empty; each must be
  /// memory of its own (a grad listed twice would be unscaled twice). Otherwise amp::Error, before
  /// anything is unscaled; a disabled scaler checks the count only.
  void unscale_(torch::optim::Optimizer &optimizer, const std::vector<torch::Tensor> &grads);
  /// The checked unscale: unscale_ (same states and errors), then whether every grad was finite,
  /// i.e. whether step() will apply the update. Unlike unscale_ it reads the inf check on the
  /// host (one sync). Disabled: nothing is unscaled, and it answers all_finite(grads).
  bool unscale_and_check(torch::optim::Optimizer &optimizer, const std::vector<torch::Tensor> &grads);
  /// Unscales first if unscale_ was not called; then, unless an inf/NaN was found, puts `grads`
  /// into the parameters' `.grad` (fp32), calls optimizer.step() and puts the old `.grad` back.
  /// `grads` pair up with the parameters of all groups, or of the first group. After unscale_,
  /// each grad must be one that unscale_ unscaled (the same memory, modified in place or not) or
  /// computed from it by amp::clip_by_global_norm after the unscale; any other grad may still be
  /// scaled and is an amp::Error (docs/runtime.md, "Which grads step() takes").
  void step(torch::optim::Optimizer &optimizer, const std::vector<torch::Tensor> &grads);

  /// Pointer-like optimizers: std::shared_ptr, std::unique_ptr, raw pointers.
  template <class P, class = decltype(static_cast<torch::optim::Optimizer &>(*std::declval<P>()))>
  void unscale_(const P &optimizer, const std::vector<torch::Tensor> &grads) {
    unscale_(static_cast<torch::optim::Optimizer &>(*optimizer), grads);
  }
  template <class P, class = decltype(static_cast<torch::optim::Optimizer &>(*std::declval<P>()))>
  void step(const P &optimizer, const std::vector<torch::Tensor> &grads) {
    step(static_cast<torch::optim::Optimizer &>(*optimizer), grads);
  }
  template <class P, class = decltype(static_cast<torch::optim::Optimizer &>(*std::declval<P>()))>
  bool unscale_and_check(const P &optimizer, const std::vector<torch::Tensor> &grads) {
    return unscale_and_check(static_cast<torch::optim::Optimizer &>(*optimizer), grads);
  }

  /// Backoff/growth from the recorded inf checks (on the device); resets every optimizer's state.
  void update();
  void update(double new_scale);
  void update(const torch::Tensor &new_scale);

  double get_scale() const; // host read (the one sync); 1.0 when disabled
  std::int64_t get_growth_tracker() const;
  double get_growth_factor() const { return options_.growth_factor(); }
  double get_backoff_factor() const { return options_.backoff_factor(); }
  std::int64_t get_growth_interval() const { return options_.growth_interval(); }
  bool is_enabled() const { return options_.enabled(); }

  /// Keys: scale, growth_factor, backoff_factor, growth_interval, _growth_tracker (empty when
  /// disabled, as in PyTorch).
  std::map<std::string, double> state_dict() const;
  void load_state_dict(const std::map<std::string, double> &state);

private:
  enum class Stage { Ready, Unscaled, Stepped };
  struct OptimizerState {
    Stage stage = Stage::Ready;
    std::vector<torch::Tensor> found_inf_per_device;
    std::shared_ptr<const detail::UnscaledGrads> unscaled; ///< set by unscale_, checked by step
  };
  void ensure_scale(const torch::Device &device);
  /// Unscales and checks `grads`; with `with_norm`, also returns their global norm after the
  /// unscale, computed in the same pass (undefined where it was not: grads on several devices
  /// or non-contiguous ones).
  torch::Tensor unscale_grads(OptimizerState &state, const std::vector<torch::Tensor> &grads,
                              bool with_norm = false);
  void check_scale_exists(const char *what) const;

  GradScalerOptions options_;
  torch::Tensor scale_;          // 0-dim fp32, on the device of the first tensor scaled
  torch::Tensor growth_tracker_; // 0-dim int32, same device
  torch::Tensor inv_scale_;      // 0-dim fp32, same device: 1 / scale, set by each unscale
  double loaded_scale_ = 0.0;    // from load_state_dict before the first scale()
  std::int64_t loaded_tracker_ = 0;
  std::unordered_map<const torch::optim::Optimizer *, OptimizerState> per_optimizer_;
};

/// Scaler checkpoints shared with Python PyTorch. The bytes are those of
/// `torch.save(scaler.state_dict(), f)`: a zip archive whose data.pkl is a plain dict (floats for
/// scale and the factors, ints for growth_interval and _growth_tracker), so Python's torch.load
/// reads what save_scaler_state writes (weights_only too), and load_scaler_state reads a file that
/// Python saved (through libtorch's pickle loader). Errors name the file and the key. Only a
/// regular file of at most 1 MiB is read (a directory, device or FIFO is an amp::Error naming it,
/// without opening a device or waiting on a FIFO).
std::vector<char> scaler_state_bytes(const GradScaler &scaler);
void load_scaler_state_bytes(GradScaler &scaler, const std::vector<char> &bytes,
                             const std::string &source = "<bytes>");
void save_scaler_state(const GradScaler &scaler, const std::string &path);
void load_scaler_state(GradScaler &scaler, const std::string &path);

} // namespace amp
