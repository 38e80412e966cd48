// auto_mixed_precision for libtorch modules: the levels' forward policy, fp32 master parameters
// with low-precision copies swapped in for forward and backward, and explicit gradients.
#include <amp/torch.h>

#include "core_dispatch.h"
#include "step_cache.h"

#include <ATen/autocast_mode.h>
#include <fmt/format.h>
#include <torch/nn/functional/instancenorm.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/instancenorm.h>
#include <torch/nn/modules/normalization.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/version.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>
#include <tuple>
#include <unordered_set>

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define AMP_TORCH_DEVICE_AUTOCAST_API 1
#endif

namespace amp {

Level parse_level(const std::string &name) {
  std::string up = name;
  std::transform(up.begin(), up.end(), up.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (up == "O0")
    return Level::O0;
  if (up == "O1")
    return Level::O1;
  if (up == "O2")
    return Level::O2;
  if (up == "O3")
    return Level::O3;
  throw Error(fmt::format(
      "amp::auto_mixed_precision: unknown level '{}'; valid levels are O0, O1, O2, O3", name));
}

const char *level_name(Level level) {
  switch (level) {
  case Level::O0:
    return "O0";
  case Level::O1:
    return "O1";
  case Level::O2:
    return "O2";
  case Level::O3:
    return "O3";
  }
  return "?";
}

namespace detail {

/// One converted module. `swapped` lists the tensors (parameters and buffers) whose data is
/// replaced by a low-precision copy during forward; `masters` holds their fp32 data meanwhile.
struct ConversionState : std::enable_shared_from_this<ConversionState> {
  torch::nn::Module *module = nullptr;
  std::shared_ptr<torch::nn::Module> owner;
  Level level = Level::O0;
  Level requested_level = Level::O0;
  std::optional<torch::Dtype> requested_dtype;
  std::optional<torch::DeviceType> requested_device_type;
  torch::Device device = torch::kCPU;
  torch::Dtype low = torch::kBFloat16;
  std::vector<torch::Tensor> swapped;
  std::vector<torch::Tensor> masters; // non-empty while the copies are in
  bool copies_in = false;
  std::mutex mutex;
  ~ConversionState();
};

Level level_of(const ConversionState &state) { return state.level; }

namespace {

enum class NormKind { None, Batch, Instance, Layer, Group };

NormKind norm_kind(const torch::nn::Module &m) {
  using namespace torch::nn;
  if (dynamic_cast<const BatchNorm1dImpl *>(&m) || dynamic_cast<const BatchNorm2dImpl *>(&m) ||
      dynamic_cast<const BatchNorm3dImpl *>(&m))
    return NormKind::Batch;
  if (dynamic_cast<const InstanceNorm1dImpl *>(&m) ||
      dynamic_cast<const InstanceNorm2dImpl *>(&m) ||
      dynamic_cast<const InstanceNorm3dImpl *>(&m))
    return NormKind::Instance;
  if (dynamic_cast<const LayerNormImpl *>(&m))
    return NormKind::Layer;
  if (dynamic_cast<const GroupNormImpl *>(&m))
    return NormKind::Group;
  return NormKind::None;
}

/// Whether this libtorch's kernel for a norm takes low-precision input with parameters of
/// `param_dtype` (running statistics stay fp32). Debian's 1.13 CPU kernels refuse bf16 input
/// with fp32 weights for layer_norm and group_norm; 2.x accepts it. Probed once per combination.
bool norm_accepts(NormKind kind, const torch::Device &device, torch::Dtype low,
                  torch::Dtype param_dtype) {
  static std::mutex mutex;
  static std::map<std::tuple<int, std::string, int, int>, bool> known;
  auto key = std::make_tuple(static_cast<int>(kind), device.str(), static_cast<int>(low),
                             static_cast<int>(param_dtype));
  std::lock_guard<std::mutex> lock(mutex);
  auto it = known.find(key);
  if (it != known.end())
    return it->second;
  bool ok = true;
  try {
    torch::NoGradGuard no_grad;
    auto opts = torch::TensorOptions().device(device);
    auto x = torch::randn({2, 4, 3}, opts.dtype(low));
    auto w = torch::ones({4}, opts.dtype(param_dtype));
    auto b = torch::zeros({4}, opts.dtype(param_dtype));
    auto rm = torch::zeros({4}, opts.dtype(torch::kFloat));
    auto rv = torch::ones({4}, opts.dtype(torch::kFloat));
    switch (kind) {
    case NormKind::Batch:
      torch::batch_norm(x, w, b, rm, rv, true, 0.1, 1e-5, false);
      break;
    case NormKind::Instance:
      torch::instance_norm(x, w, b, rm, rv, true, 0.1, 1e-5, false);
      break;
    case NormKind::Layer:
      torch::layer_norm(x.transpose(1, 2).contiguous(), {4}, w, b);
      break;
    case NormKind::Group:
      torch::group_norm(x, 2, w, b);
      break;
    case NormKind::None:
      break;
    }
  } catch (const std::exception &) {
    ok = false;
  }
  known.emplace(key, ok);
  return ok;
}

bool is_fp32(const torch::Tensor &t) { return t.defined() && t.scalar_type() == torch::kFloat; }

/// Which tensors get low-precision copies: O3 all fp32 parameters and buffers except norm
/// statistics; O2 the same outside norm layers, whose parameters stay fp32 where the kernel
/// takes mixed input (otherwise they are copied too, see docs/runtime.md).
void collect(ConversionState &state, torch::nn::Module &m,
             std::unordered_set<const c10::TensorImpl *> &seen) {
  const NormKind kind = norm_kind(m);
  bool copy_params = true;
  if (kind != NormKind::None) {
    if (state.level == Level::O2)
      copy_params = !norm_accepts(kind, state.device, state.low, torch::kFloat);
    else
      copy_params = norm_accepts(kind, state.device, state.low, state.low);
  }
  auto add = [&](const torch::Tensor &t) {
    if (is_fp32(t) && seen.insert(t.unsafeGetTensorImpl()).second)
      state.swapped.push_back(t);
  };
  if (copy_params)
    for (const auto &p : m.named_parameters(/*recurse=*/false))
      add(p.value());
  if (kind == NormKind::None)
    for (const auto &b : m.named_buffers(/*recurse=*/false))
      add(b.value());
  for (const auto &child : m.children())
    collect(state, *child, seen);
}

std::mutex registry_mutex;
std::map<const torch::nn::Module *, std::weak_ptr<ConversionState>> registry;

/// Conversions whose copies stay in until the backward pass of the enclosing value_and_grad. Held
/// strongly: a conversion made inside a function (`auto amp_model = auto_mixed_precision(...)`
/// in the loss function the step calls) must outlive its handle until the masters are back.
std::mutex swapped_mutex;
std::vector<std::shared_ptr<ConversionState>> swapped_states;
thread_local int grad_scope_depth = 0;

torch::Device device_of(torch::nn::Module &m) {
  for (const auto &p : m.parameters())
    return p.device();
  for (const auto &b : m.buffers())
    return b.device();
  return torch::kCPU;
}

/// Swapping a parameter's data to another dtype (set_data) detaches it from its gradient
/// accumulator: a graph built before the swap still ends in the old accumulator, which autograd
/// no longer finds for the parameter. Those accumulators, while a graph keeps them alive, so that
/// grads_of can tell a loss differentiated through such a graph (a forward of an O2/O3 model made
/// in an earlier value_and_grad) from a parameter the loss does not use.
std::mutex stale_mutex;
std::unordered_map<const c10::TensorImpl *, std::vector<std::weak_ptr<torch::autograd::Node>>>
    stale_accumulators;

void remember_accumulator(const torch::Tensor &t) {
  auto acc = torch::autograd::impl::try_get_grad_accumulator(t);
  if (!acc)
    return;
  std::lock_guard<std::mutex> lock(stale_mutex);
  auto &list = stale_accumulators[t.unsafeGetTensorImpl()];
  list.erase(std::remove_if(list.begin(), list.end(), [](const auto &w) { return w.expired(); }),
             list.end());
  list.push_back(acc);
}

/// The live accumulators a swap left behind for `param` (none for most parameters).
std::vector<std::shared_ptr<torch::autograd::Node>> stale_for(const torch::Tensor &param) {
  std::vector<std::shared_ptr<torch::autograd::Node>> out;
  std::lock_guard<std::mutex> lock(stale_mutex);
  auto it = stale_accumulators.find(param.unsafeGetTensorImpl());
  if (it == stale_accumulators.end())
    return out;
  for (const auto &w : it->second)
    if (auto node = w.lock())
      out.push_back(std::move(node));
  return out;
}

/// Whether the graph of `value` reaches one of `targets`.
bool graph_reaches(const torch::Tensor &value,
                   const std::vector<std::shared_ptr<torch::autograd::Node>> &targets) {
  std::unordered_set<const torch::autograd::Node *> wanted, seen;
  for (const auto &t : targets)
    wanted.insert(t.get());
  std::vector<torch::autograd::Node *> todo;
  if (auto fn = value.grad_fn())
    todo.push_back(fn.get());
  while (!todo.empty()) {
    torch::autograd::Node *n = todo.back();
    todo.pop_back();
    if (!seen.insert(n).second)
      continue;
    if (wanted.count(n))
      return true;
    for (const auto &e : n->next_edges())
      if (e.function)
        todo.push_back(e.function.get());
  }
  return false;
}

void copies_in(ConversionState &state) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> lows;
  state.masters.clear();
  state.masters.reserve(state.swapped.size());
  lows.reserve(state.swapped.size());
  for (const auto &t : state.swapped) {
    // variable_data shares the fp32 storage; the optimizer's tensor keeps its identity.
    state.masters.push_back(t.variable_data());
    lows.push_back(torch::empty(t.sizes(), t.options().dtype(state.low)));
    remember_accumulator(t);
  }
  std::vector<torch::Tensor> srcs;
  srcs.reserve(state.masters.size());
  for (const auto &m : state.masters)
    srcs.push_back(m.is_contiguous() ? m : m.contiguous());
  cast_copy(srcs, lows);
  for (std::size_t i = 0; i < state.swapped.size(); ++i)
    state.swapped[i].set_data(lows[i]);
  state.copies_in = true;
}

void masters_in(ConversionState &state) {
  if (!state.copies_in)
    return;
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < state.swapped.size(); ++i) {
    auto &t = state.swapped[i];
    remember_accumulator(t);
    t.set_data(state.masters[i]);
    // A `.backward()` while the copies were in accumulated low-precision grads.
    if (t.grad().defined() && t.grad().scalar_type() != t.scalar_type())
      t.mutable_grad() = t.grad().to(t.scalar_type());
  }
  state.masters.clear();
  state.copies_in = false;
}

struct AutocastState {
  bool enabled;
  torch::Dtype dtype;
};

AutocastState autocast_enter(torch::DeviceType device, torch::Dtype dtype) {
  AutocastState prev{};
#if defined(AMP_TORCH_DEVICE_AUTOCAST_API)
  prev.enabled = at::autocast::is_autocast_enabled(device);
  prev.dtype = at::autocast::get_autocast_dtype(device);
  at::autocast::set_autocast_dtype(device, dtype);
  at::autocast::set_autocast_enabled(device, true);
#else
  if (device == torch::kCUDA) {
    prev.enabled = at::autocast::is_enabled();
    prev.dtype = at::autocast::get_autocast_gpu_dtype();
    at::autocast::set_autocast_gpu_dtype(dtype);
    at::autocast::set_enabled(true);
  } else {
    prev.enabled = at::autocast::is_cpu_enabled();
    prev.dtype = at::autocast::get_autocast_cpu_dtype();
    at::autocast::set_autocast_cpu_dtype(dtype);
    at::autocast::set_cpu_enabled(true);
  }
#endif
  at::autocast::increment_nesting();
  return prev;
}

void autocast_exit(torch::DeviceType device, AutocastState prev) {
  if (at::autocast::decrement_nesting() == 0)
    at::autocast::clear_cache();
#if defined(AMP_TORCH_DEVICE_AUTOCAST_API)
  at::autocast::set_autocast_enabled(device, prev.enabled);
  at::autocast::set_autocast_dtype(device, prev.dtype);
#else
  if (device == torch::kCUDA) {
    at::autocast::set_enabled(prev.enabled);
    at::autocast::set_autocast_gpu_dtype(prev.dtype);
  } else {
    at::autocast::set_cpu_enabled(prev.enabled);
    at::autocast::set_autocast_cpu_dtype(prev.dtype);
  }
#endif
}

} // namespace

/// The last owner gone with the copies still in (no value_and_grad to restore them): the
/// module gets its fp32 masters back rather than keeping the copies.
ConversionState::~ConversionState() {
  if (copies_in)
    masters_in(*this);
}

std::shared_ptr<ConversionState> convert(torch::nn::Module &module,
                                         std::shared_ptr<torch::nn::Module> owner, Level level,
                                         std::optional<torch::Dtype> dtype,
                                         std::optional<torch::DeviceType> device_type) {
  // A Level cast from an out-of-range integer would fall through every policy switch.
  if (level != Level::O0 && level != Level::O1 && level != Level::O2 && level != Level::O3)
    throw Error(fmt::format("amp::auto_mixed_precision: invalid Level value {} (O0, O1, O2 or O3)",
                            static_cast<int>(level)));
  if (dtype && *dtype != torch::kHalf && *dtype != torch::kBFloat16)
    throw Error(fmt::format(
        "amp::auto_mixed_precision: dtype must be torch::kHalf or torch::kBFloat16, got {}",
        c10::toString(*dtype)));
  std::lock_guard<std::mutex> lock(registry_mutex);
  auto it = registry.find(&module);
  if (it != registry.end()) {
    if (auto existing = it->second.lock()) {
      if (existing->requested_level != level || existing->requested_dtype != dtype ||
          existing->requested_device_type != device_type)
        throw Error(fmt::format("amp::auto_mixed_precision: this module is already converted at "
                                "{} (with another dtype, level or device type now); convert each "
                                "module once",
                                level_name(existing->requested_level)));
      if (owner && !existing->owner)
        existing->owner = std::move(owner);
      return existing;
    }
  }
  auto state = std::make_shared<ConversionState>();
  state->module = &module;
  state->owner = std::move(owner);
  state->requested_level = level;
  state->requested_dtype = dtype;
  state->requested_device_type = device_type;
  state->device = device_of(module);
  // Mixed precision for one device type only (the original's autocast scope was that device's):
  // elsewhere the model trains as it did, in fp32.
  state->level = device_type && state->device.type() != *device_type ? Level::O0 : level;
  level = state->level;
  state->low = dtype.value_or(state->device.is_cuda() ? torch::kHalf : torch::kBFloat16);
  if (level == Level::O2 || level == Level::O3) {
    std::unordered_set<const c10::TensorImpl *> seen;
    collect(*state, module, seen);
  }
  registry[&module] = state;
  // Drop entries of modules whose conversions are gone.
  for (auto i = registry.begin(); i != registry.end();)
    i = i->second.expired() ? registry.erase(i) : std::next(i);
  return state;
}

ForwardScope::ForwardScope(ConversionState &state) : state_(state) {
  if (state_.level == Level::O0)
    return;
  cast_outputs_ = true;
  // Copies first: if the cast throws, nothing (autocast) is left to undo.
  if (state_.level == Level::O2 || state_.level == Level::O3) {
    input_dtype_ = state_.low;
    std::lock_guard<std::mutex> lock(state_.mutex);
    if (!state_.copies_in) {
      copies_in(state_);
      if (grad_scope_depth > 0 && torch::GradMode::is_enabled()) {
        // Backward needs the copies: they stay in until value_and_grad has the grads.
        std::lock_guard<std::mutex> swapped_lock(swapped_mutex);
        swapped_states.push_back(state_.shared_from_this());
      } else {
        restore_after_forward_ = true;
      }
    }
  }
  if (state_.level == Level::O1 || state_.level == Level::O2) {
    autocast_device_ = state_.device.type();
    auto prev = autocast_enter(autocast_device_, state_.low);
    autocast_ = true;
    autocast_was_enabled_ = prev.enabled;
    autocast_previous_dtype_ = prev.dtype;
  }
}

ForwardScope::~ForwardScope() {
  if (autocast_)
    autocast_exit(autocast_device_, {autocast_was_enabled_, autocast_previous_dtype_});
  if (restore_after_forward_) {
    std::lock_guard<std::mutex> lock(state_.mutex);
    masters_in(state_);
  }
}

torch::Tensor ForwardScope::input(const torch::Tensor &t) const {
  if (!input_dtype_ || !t.defined() || t.scalar_type() != torch::kFloat)
    return t;
  return t.to(*input_dtype_);
}

torch::Tensor ForwardScope::output(const torch::Tensor &t) const {
  if (!cast_outputs_ || !t.defined())
    return t;
  if (t.scalar_type() == torch::kHalf || t.scalar_type() == torch::kBFloat16)
    return t.to(torch::kFloat);
  return t;
}

void restore_masters() {
  std::vector<std::shared_ptr<ConversionState>> states;
  {
    std::lock_guard<std::mutex> lock(swapped_mutex);
    states.swap(swapped_states);
  }
  for (auto &s : states) {
    std::lock_guard<std::mutex> lock(s->mutex);
    masters_in(*s);
  }
}

GradScope::GradScope() {
  ++grad_scope_depth;
  step_cache_enter();
}

GradScope::~GradScope() {
  step_cache_leave();
  if (--grad_scope_depth == 0)
    restore_masters();
}

std::vector<torch::Tensor> grads_of(const torch::Tensor &value,
                                    const std::vector<torch::Tensor> &params) {
  if (!value.defined())
    throw Error("amp::value_and_grad: the function returned an undefined tensor");
  if (value.numel() != 1)
    throw Error(fmt::format(
        "amp::value_and_grad: the function must return a one-element loss, got shape {}",
        c10::str(value.sizes())));
  std::vector<torch::Tensor> inputs;
  std::vector<std::size_t> where;
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (params[i].defined() && params[i].requires_grad()) {
      inputs.push_back(params[i]);
      where.push_back(i);
    }
  }
  // A loss that does not require grad has no graph at all (computed under NoGradGuard or
  // inference mode, detached, or from constants): every grad would be zero and the step would
  // train on nothing. Unlike a parameter the loss does not use (zeros, MindSpore's rule), that is
  // never what the program meant. With every parameter frozen, there is nothing to differentiate.
  if (!value.requires_grad() && !inputs.empty()) {
    if (grad_scope_depth <= 1)
      restore_masters();
    throw Error("amp::value_and_grad: the loss does not require grad, so it has no gradient path "
                "to any parameter (it was computed under torch::NoGradGuard or inference mode, "
                "detached, or from tensors that do not require grad); every grad would be zero");
  }
  std::vector<torch::Tensor> raw;
  if (!inputs.empty())
    raw = torch::autograd::grad({value}, inputs, /*grad_outputs=*/{}, /*retain_graph=*/false,
                                /*create_graph=*/false, /*allow_unused=*/true);
  // A parameter without a gradient: unused, or used through a graph whose accumulator a swap of
  // its data replaced. The second would silently train on zeros; say so instead.
  for (std::size_t k = 0; k < raw.size(); ++k) {
    if (raw[k].defined())
      continue;
    auto stale = stale_for(inputs[k]);
    if (!stale.empty() && graph_reaches(value, stale)) {
      if (grad_scope_depth <= 1)
        restore_masters();
      throw Error(fmt::format(
          "amp::value_and_grad: the loss is differentiated through the output of an O2/O3 model's "
          "forward that ran outside this call (in an earlier value_and_grad, e.g. a GAN's "
          "generator output from the discriminator's step); its graph used the model's "
          "low-precision weight copies, swapped out since, so parameter {} of the list would get "
          "no gradient. Run that forward again inside this function, or convert the model at O1",
          where[k]));
    }
  }
  if (grad_scope_depth <= 1)
    restore_masters();
  std::vector<torch::Tensor> grads(params.size());
  for (std::size_t k = 0; k < raw.size(); ++k)
    grads[where[k]] = std::move(raw[k]);
  raw.clear();
  torch::NoGradGuard no_grad;
  // Like `.grad` after backward() (AccumulateGrad keeps a grad only when nothing else holds it,
  // else it copies): every grad dense memory of its own, so that the in-place ops on the list
  // (unscale_, clip_by_global_norm_, accumulate_grads) change each element once. Autograd can
  // hand one tensor to several inputs (`(a + b).sum()`: both get the same expanded ones). The
  // storage's own use count is no test: autograd's result keeps a second reference to each
  // fresh grad's storage (libtorch 1.13 and 2.11), so it would copy every grad of every step.
  std::unordered_set<const void *> storages;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto &p = params[i];
    if (!p.defined())
      continue;
    auto &g = grads[i];
    if (!g.defined()) {
      g = torch::zeros_like(p);
    } else if (g.scalar_type() != p.scalar_type()) {
      g = g.to(p.scalar_type());
    } else if (!g.is_non_overlapping_and_dense() || g.use_count() != 1 ||
               !storages.insert(g.storage().unsafeGetStorageImpl()).second) {
      g = g.clone(torch::MemoryFormat::Contiguous);
    }
  }
  return grads;
}

} // namespace detail

torch::Tensor cast_to_adapter_tensor(const torch::Tensor &x) {
  if (x.defined() && (x.scalar_type() == torch::kHalf || x.scalar_type() == torch::kBFloat16))
    return x.to(torch::kFloat);
  return x;
}

void detail::split_grads_mismatch(std::size_t grads, std::size_t parameters) {
  throw Error(fmt::format("amp::split_grads: {} grads do not pair up with the optimizers' {} "
                          "parameters",
                          grads, parameters));
}

std::vector<torch::Tensor> detail::all_parameters(torch::optim::Optimizer &optimizer) {
  std::vector<torch::Tensor> out;
  for (auto &group : optimizer.param_groups())
    for (auto &p : group.params())
      out.push_back(p);
  return out;
}

void accumulate_grads(std::vector<torch::Tensor> &acc, const std::vector<torch::Tensor> &micro) {
  if (acc.empty()) {
    acc = micro;
    return;
  }
  if (acc.size() != micro.size())
    throw Error(fmt::format(
        "amp::accumulate_grads: {} grads do not pair up with {} accumulated ones", micro.size(),
        acc.size()));
  // add_ broadcasts: a grad of another shape would be added to every row, or a scalar to every
  // element. Checked for every pair before anything is added.
  for (std::size_t i = 0; i < acc.size(); ++i)
    if (acc[i].defined() && micro[i].defined() && acc[i].sizes() != micro[i].sizes())
      throw Error(fmt::format(
          "amp::accumulate_grads: grad {} has shape {} but the accumulated grad {} has shape {}",
          i, c10::str(micro[i].sizes()), i, c10::str(acc[i].sizes())));
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < acc.size(); ++i) {
    if (!micro[i].defined())
      continue;
    if (!acc[i].defined())
      acc[i] = micro[i].clone();
    else
      acc[i].add_(micro[i]);
  }
}

} // namespace amp
