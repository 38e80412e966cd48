// Mock of the libtorch API surface amp-migrate cares about: same namespaces, names and shapes as
// the real headers (1.13 and 2.4+ autocast APIs), nothing else. Keeps lit tests fast.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace c10 {
enum class DeviceType : int8_t { CPU = 0, CUDA = 1 };
enum class ScalarType : int8_t { Float, Half, BFloat16, Double, Long };
constexpr DeviceType kCPU = DeviceType::CPU;
constexpr DeviceType kCUDA = DeviceType::CUDA;
struct Device {
  Device(DeviceType t, int i = -1) : type_(t), index_(i) {}
  DeviceType type() const { return type_; }
  DeviceType type_;
  int index_;
};
namespace impl {
struct ExcludeDispatchKeyGuard {
  explicit ExcludeDispatchKeyGuard(int key);
  ~ExcludeDispatchKeyGuard();
};
} // namespace impl
// Gradient recording off for a block (c10/core/GradMode.h, c10/core/InferenceMode.h).
struct NoGradGuard {
  NoGradGuard();
  ~NoGradGuard();
};
struct InferenceMode {
  InferenceMode(bool enabled = true);
  ~InferenceMode();
};
} // namespace c10

namespace at {
using NoGradGuard = c10::NoGradGuard;
using c10::Device;
using c10::DeviceType;
using c10::ScalarType;
using c10::kCPU;
using c10::kCUDA;
constexpr ScalarType kHalf = ScalarType::Half;
constexpr ScalarType kBFloat16 = ScalarType::BFloat16;
constexpr ScalarType kFloat = ScalarType::Float;
class Tensor {
public:
  Tensor() = default;
  void backward() const;
  void backward(const Tensor &gradient) const;
  void backward(const Tensor &gradient, bool retain_graph, bool create_graph = false) const;
  template <typename T> T item() const;
  Tensor item() const;
  Tensor detach() const;
  Tensor to(ScalarType t) const;
  Tensor to(Device d) const;
  Tensor &grad() const;
  Tensor &mutable_grad() const;
  int64_t size(int64_t dim) const;
  Tensor &clamp_(double min, double max);
  Tensor &zero_();
  Tensor &detach_();
  Tensor norm() const;
  int64_t numel() const;
  Tensor sum() const;
  Tensor mean() const;
  bool defined() const;
  Tensor &operator+=(const Tensor &o);
  Tensor &operator+=(double o);
  Tensor &operator/=(double o);
  Tensor &div_(double o);
  Tensor &mul_(double o);
  Tensor argmax(int64_t dim) const;
  Tensor eq(const Tensor &o) const;
};
Tensor operator+(const Tensor &a, const Tensor &b);
Tensor operator*(const Tensor &a, double b);
Tensor operator/(const Tensor &a, double b);
Tensor operator/(const Tensor &a, int b);
Tensor operator-(const Tensor &a, const Tensor &b);

namespace autocast {
// 1.x API
bool is_enabled();
void set_enabled(bool enabled);
bool is_cpu_enabled();
void set_cpu_enabled(bool enabled);
ScalarType get_autocast_gpu_dtype();
ScalarType get_autocast_cpu_dtype();
void set_autocast_gpu_dtype(ScalarType dtype);
void set_autocast_cpu_dtype(ScalarType dtype);
void clear_cache();
int increment_nesting();
int decrement_nesting();
bool is_autocast_cache_enabled();
void set_autocast_cache_enabled(bool enabled);
// 2.4+ API
bool is_autocast_enabled(DeviceType device_type);
void set_autocast_enabled(DeviceType device_type, bool enabled);
ScalarType get_autocast_dtype(DeviceType device_type);
void set_autocast_dtype(DeviceType device_type, ScalarType dtype);
Tensor cached_cast(ScalarType to_type, const Tensor &arg, DeviceType device_type = DeviceType::CUDA);
} // namespace autocast
} // namespace at

namespace torch {
using at::Tensor;
using at::Device;
using at::kCPU;
using at::kCUDA;
using at::kHalf;
using at::kBFloat16;
using at::kFloat;
namespace autocast = at::autocast;
Tensor randn(std::vector<int64_t> sizes);
Tensor zeros(std::vector<int64_t> sizes);
Tensor ones(std::vector<int64_t> sizes);
Tensor tensor(double v);
Tensor nll_loss(const Tensor &input, const Tensor &target);
Tensor mse_loss(const Tensor &input, const Tensor &target);
Tensor cross_entropy(const Tensor &input, const Tensor &target);
Tensor log_softmax(const Tensor &input, int64_t dim);
Tensor relu(const Tensor &x);
Tensor isfinite(const Tensor &x);
Tensor isnan(const Tensor &x);
Tensor matmul(const Tensor &a, const Tensor &b);
using NoGradGuard = c10::NoGradGuard;

namespace nn {
class Module {
public:
  virtual ~Module() = default;
  std::vector<Tensor> parameters(bool recurse = true) const;
  void train(bool on = true);
  void eval();
  bool is_training() const;
  void zero_grad(bool set_to_none = true);
  void to(Device d);
  template <typename M> std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> m);
};
template <typename Contained> class ModuleHolder {
public:
  template <typename... Args> explicit ModuleHolder(Args &&...args);
  ModuleHolder(std::nullptr_t);
  Contained *operator->() const;
  Contained &operator*() const;
  const std::shared_ptr<Contained> &ptr() const;
  template <typename... Args> auto operator()(Args &&...args) -> decltype(std::declval<Contained &>().forward(std::forward<Args>(args)...));
};
struct LinearImpl : Module {
  LinearImpl(int64_t in, int64_t out);
  Tensor forward(const Tensor &x);
};
struct Linear : ModuleHolder<LinearImpl> {
  using ModuleHolder<LinearImpl>::ModuleHolder;
};
struct LayerNormImpl : Module {
  Tensor forward(const Tensor &x);
};
namespace utils {
double clip_grad_norm_(std::vector<Tensor> parameters, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);
double clip_grad_norm_(Tensor parameter, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);
void clip_grad_value_(std::vector<Tensor> parameters, double clip_value);
} // namespace utils
namespace functional {
Tensor cross_entropy(const Tensor &input, const Tensor &target);
}
} // namespace nn

namespace optim {
class Optimizer {
public:
  virtual ~Optimizer() = default;
  virtual Tensor step();
  void zero_grad(bool set_to_none = true);
  std::vector<Tensor> &parameters() noexcept;
};
struct SGDOptions {
  SGDOptions(double lr);
  SGDOptions &momentum(double m);
  SGDOptions &weight_decay(double w);
};
struct OptimizerOptions {
  virtual ~OptimizerOptions() = default;
};
class OptimizerParamGroup {
public:
  OptimizerParamGroup(std::vector<Tensor> params);
  OptimizerParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options);
};
class SGD : public Optimizer {
public:
  SGD(std::vector<Tensor> params, SGDOptions options);
  SGD(std::vector<OptimizerParamGroup> groups, SGDOptions options);
};
struct AdamOptions {
  AdamOptions(double lr = 1e-3);
};
class Adam : public Optimizer {
public:
  Adam(std::vector<Tensor> params, AdamOptions options = {});
};
} // namespace optim
namespace data {}
} // namespace torch

#define TORCH_MODULE(Name)                                                                         \
  struct Name : torch::nn::ModuleHolder<Name##Impl> {                                              \
    using torch::nn::ModuleHolder<Name##Impl>::ModuleHolder;                                       \
  }
#define TORCH_VERSION_MAJOR 1
#define TORCH_VERSION_MINOR 13
