// The public entry points: argument validation (one message format for every op), then dispatch
// to the CPU or CUDA backend with the op's functor.
#include "amp/runtime.h"

#include "backend.h"
#include "cuda_backend.h"
#include "functors.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>

namespace amp {

const char *dtype_name(DType t) {
  switch (t) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  }
  return "unknown";
}

std::size_t dtype_size(DType t) {
  switch (t) {
  case DType::F32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  }
  return 0;
}

bool cuda_available() { return cuda::available(); }

namespace {

std::string device_name(Device d) {
  return fmt::format("{}:{}", d.kind == DeviceKind::CPU ? "cpu" : "cuda", d.index);
}

[[noreturn]] void fail(const char *op, std::int64_t index, const std::string &problem) {
  if (index >= 0)
    throw Error(fmt::format("amp::{}: tensor {}: {}", op, index, problem));
  throw Error(fmt::format("amp::{}: {}", op, problem));
}

bool valid_dtype(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

/// Validates one list. `only_f32` is for optimizer state and master params.
void check_list(const char *op, const char *what, const std::vector<TensorView> &list,
                const ExecContext &ctx, bool only_f32 = false) {
  for (std::size_t i = 0; i < list.size(); ++i) {
    const TensorView &t = list[i];
    const auto idx = static_cast<std::int64_t>(i);
    if (!valid_dtype(t.dtype))
      fail(op, idx,
           fmt::format("{} has an unknown dtype code {}", what, static_cast<int>(t.dtype)));
    if (only_f32 && t.dtype != DType::F32)
      fail(op, idx, fmt::format("{} must be f32, got {}", what, dtype_name(t.dtype)));
    if (t.device != ctx.device)
      fail(op, idx,
           fmt::format("{} is on {} but the call runs on {} (all tensors of a call must be on "
                       "one device)",
                       what, device_name(t.device), device_name(ctx.device)));
    if (t.numel < 0)
      fail(op, idx, fmt::format("{} has a negative numel {}", what, t.numel));
    if (t.numel > 0 && t.data == nullptr)
      fail(op, idx, fmt::format("{} has a null data pointer with numel {}", what, t.numel));
    // Element alignment is what the kernels need (vector loads fall back to scalar ones when a
    // tensor is not 16-byte aligned); a misaligned element pointer is a bug in the caller.
    if (reinterpret_cast<std::uintptr_t>(t.data) % dtype_size(t.dtype) != 0)
      fail(op, idx,
           fmt::format("{} data pointer is not aligned to its {}-byte element size", what,
                       dtype_size(t.dtype)));
  }
}

void check_pairs(const char *op, const char *a_name, const std::vector<TensorView> &a,
                 const char *b_name, const std::vector<TensorView> &b) {
  if (a.size() != b.size())
    fail(op, -1,
         fmt::format("{} has {} tensors but {} has {}", a_name, a.size(), b_name, b.size()));
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].numel != b[i].numel)
      fail(op, static_cast<std::int64_t>(i),
           fmt::format("{} has {} elements but {} has {}", a_name, a[i].numel, b_name, b[i].numel));
}

/// A CUDA context loads the CUDA backend here, on the first call that needs it.
void check_context(const char *op, const ExecContext &ctx) {
  if (ctx.threads < 0)
    fail(op, -1, fmt::format("threads must be >= 0 (0: the runtime decides), got {}", ctx.threads));
  if (ctx.device.kind == DeviceKind::CPU)
    return;
  std::string why;
  const detail::CudaBackend *backend = detail::try_cuda_backend(&why);
  if (!backend)
    fail(op, -1, fmt::format("{}, cannot run on {}", why, device_name(ctx.device)));
  if (ctx.device.index < 0)
    fail(op, -1, fmt::format("invalid CUDA device index {}", ctx.device.index));
  if (!backend->available())
    fail(op, -1,
         fmt::format("no CUDA device or driver is available for {}", device_name(ctx.device)));
}

/// A scalar the op reads or writes: required unless `optional`; on CUDA it must be device memory.
void check_scalar(const char *op, const char *what, const void *p, const ExecContext &ctx,
                  bool optional = false) {
  if (p == nullptr) {
    if (!optional)
      fail(op, -1, fmt::format("{} must not be null", what));
    return;
  }
  // check_context has loaded the backend for a CUDA context.
  if (ctx.device.kind == DeviceKind::CUDA &&
      !detail::cuda_backend(op).is_device_pointer(p, ctx.device.index))
    fail(op, -1,
         fmt::format("{} must point to memory on {} (scalars live on the device so that no op "
                     "synchronises the host)",
                     what, device_name(ctx.device)));
}

template <class Fn> void run(const Fn &fn, const detail::ApplyArgs &args) {
  if (args.ctx.device.kind == DeviceKind::CPU) {
    detail::cpu::apply(fn, args);
    return;
  }
  detail::cuda_apply(fn, args);
}

detail::ApplyArgs make_args(const char *op, const ExecContext &ctx) {
  detail::ApplyArgs a;
  a.op = op;
  a.ctx = ctx;
  return a;
}

} // namespace

void unscale_and_check(const std::vector<TensorView> &grads, const float *inv_scale,
                       float *found_inf, const ExecContext &ctx) {
  const char *op = "unscale_and_check";
  check_context(op, ctx);
  check_list(op, "grads", grads, ctx);
  check_scalar(op, "inv_scale", inv_scale, ctx);
  check_scalar(op, "found_inf", found_inf, ctx);
  detail::UnscaleAndCheck fn{inv_scale};
  auto args = make_args(op, ctx);
  args.lists[0] = &grads;
  args.found_inf = found_inf;
  run(fn, args);
}

void global_norm(const std::vector<TensorView> &xs, float *norm, const ExecContext &ctx) {
  const char *op = "global_norm";
  check_context(op, ctx);
  check_list(op, "xs", xs, ctx);
  check_scalar(op, "norm", norm, ctx);
  detail::SumOfSquares fn;
  auto args = make_args(op, ctx);
  args.lists[0] = &xs;
  args.norm = norm;
  run(fn, args);
}

void unscale_check_and_norm(const std::vector<TensorView> &grads, const float *inv_scale,
                            float *found_inf, float *norm, const ExecContext &ctx) {
  const char *op = "unscale_check_and_norm";
  check_context(op, ctx);
  check_list(op, "grads", grads, ctx);
  check_scalar(op, "inv_scale", inv_scale, ctx);
  check_scalar(op, "found_inf", found_inf, ctx);
  check_scalar(op, "norm", norm, ctx);
  detail::UnscaleAndCheck fn{inv_scale};
  fn.with_norm = true;
  auto args = make_args(op, ctx);
  args.lists[0] = &grads;
  args.found_inf = found_inf;
  args.norm = norm;
  run(fn, args);
}

void check_and_norm(const std::vector<TensorView> &grads, const float *inv_scale, float *found_inf,
                    float *norm, const ExecContext &ctx) {
  const char *op = "check_and_norm";
  check_context(op, ctx);
  check_list(op, "grads", grads, ctx);
  check_scalar(op, "inv_scale", inv_scale, ctx, /*optional=*/true);
  check_scalar(op, "found_inf", found_inf, ctx);
  check_scalar(op, "norm", norm, ctx);
  detail::SumOfSquares fn;
  fn.inv_scale_ptr = inv_scale;
  auto args = make_args(op, ctx);
  args.lists[0] = &grads;
  args.found_inf = found_inf;
  args.norm = norm;
  run(fn, args);
}

/// A ClipRule cast from an out-of-range integer would silently pick one of the two rules.
static void check_rule(const char *op, ClipRule rule) {
  if (rule != ClipRule::MindSpore && rule != ClipRule::PyTorch)
    fail(op, -1, fmt::format("invalid ClipRule value {} (MindSpore or PyTorch)",
                             static_cast<int>(rule)));
}

void clip_coefficient(float clip_norm, const float *norm, ClipRule rule, float *coef_out,
                      const ExecContext &ctx) {
  const char *op = "clip_coefficient";
  check_context(op, ctx);
  check_rule(op, rule);
  if (!(clip_norm > 0.0f) || std::isinf(clip_norm))
    fail(op, -1, fmt::format("clip_norm must be positive and finite, got {}", clip_norm));
  check_scalar(op, "norm", norm, ctx);
  check_scalar(op, "coef_out", coef_out, ctx);
  if (ctx.device.kind == DeviceKind::CPU) {
    detail::cpu::clip_coefficient(norm, clip_norm, rule, coef_out);
    return;
  }
  detail::cuda_backend(op).clip_coefficient(norm, clip_norm, rule, coef_out, ctx);
}

void clip_by_global_norm(const std::vector<TensorView> &in, const std::vector<TensorView> &out,
                         float clip_norm, const float *norm, ClipRule rule, float *coef_out,
                         const ExecContext &ctx) {
  const char *op = "clip_by_global_norm";
  check_context(op, ctx);
  check_rule(op, rule);
  if (!(clip_norm > 0.0f) || std::isinf(clip_norm))
    fail(op, -1, fmt::format("clip_norm must be positive and finite, got {}", clip_norm));
  check_list(op, "in", in, ctx);
  check_list(op, "out", out, ctx);
  check_pairs(op, "in", in, "out", out);
  check_scalar(op, "norm", norm, ctx);
  check_scalar(op, "coef_out", coef_out, ctx, /*optional=*/true);
  detail::ClipByNorm fn{norm, clip_norm, rule == ClipRule::PyTorch};
  auto args = make_args(op, ctx);
  args.lists[0] = &in;
  args.lists[1] = &out;
  run(fn, args);
  if (coef_out)
    clip_coefficient(clip_norm, norm, rule, coef_out, ctx);
}

void update_scale(float *scale, std::int32_t *growth_tracker, const float *found_inf,
                  float growth_factor, float backoff_factor, std::int32_t growth_interval,
                  const ExecContext &ctx) {
  const char *op = "update_scale";
  check_context(op, ctx);
  if (!(growth_factor > 1.0f) || std::isinf(growth_factor))
    fail(op, -1, fmt::format("growth_factor must be > 1 and finite, got {}", growth_factor));
  if (!(backoff_factor < 1.0f) || !(backoff_factor > 0.0f))
    fail(op, -1, fmt::format("backoff_factor must be in (0, 1), got {}", backoff_factor));
  if (growth_interval < 1)
    fail(op, -1, fmt::format("growth_interval must be >= 1, got {}", growth_interval));
  check_scalar(op, "scale", scale, ctx);
  check_scalar(op, "growth_tracker", growth_tracker, ctx);
  check_scalar(op, "found_inf", found_inf, ctx);
  if (ctx.device.kind == DeviceKind::CPU) {
    detail::cpu::update_scale(scale, growth_tracker, found_inf, growth_factor, backoff_factor,
                              growth_interval);
    return;
  }
  detail::cuda_backend(op).update_scale(scale, growth_tracker, found_inf, growth_factor,
                                        backoff_factor, growth_interval, ctx);
}

void inverse_scale(const float *scale, float *inv_scale, const ExecContext &ctx) {
  const char *op = "inverse_scale";
  check_context(op, ctx);
  check_scalar(op, "scale", scale, ctx);
  check_scalar(op, "inv_scale", inv_scale, ctx);
  if (ctx.device.kind == DeviceKind::CPU) {
    detail::cpu::inverse_scale(scale, inv_scale);
    return;
  }
  detail::cuda_backend(op).inverse_scale(scale, inv_scale, ctx);
}

void cast_copy(const std::vector<TensorView> &src, const std::vector<TensorView> &dst,
               const ExecContext &ctx) {
  const char *op = "cast_copy";
  check_context(op, ctx);
  check_list(op, "src", src, ctx);
  check_list(op, "dst", dst, ctx);
  check_pairs(op, "src", src, "dst", dst);
  auto args = make_args(op, ctx);
  args.lists[0] = &src;
  args.lists[1] = &dst;
  run(detail::CastCopy{}, args);
}

namespace {

void check_step_lists(const char *op, const std::vector<TensorView> &params,
                      const std::vector<TensorView> &grads,
                      const std::vector<TensorView> &model_copies, const ExecContext &ctx) {
  check_list(op, "params", params, ctx, /*only_f32=*/true);
  check_list(op, "grads", grads, ctx);
  check_pairs(op, "params", params, "grads", grads);
  if (!model_copies.empty()) {
    check_list(op, "model_copies", model_copies, ctx);
    check_pairs(op, "params", params, "model_copies", model_copies);
  }
}

void check_step_scalars(const char *op, const float *inv_scale, const float *clip_coef,
                        const float *found_inf, const ExecContext &ctx) {
  check_scalar(op, "inv_scale", inv_scale, ctx, /*optional=*/true);
  check_scalar(op, "clip_coef", clip_coef, ctx, /*optional=*/true);
  check_scalar(op, "found_inf", found_inf, ctx, /*optional=*/true);
}

} // namespace

void fused_sgd_step(const std::vector<TensorView> &params, const std::vector<TensorView> &grads,
                    const std::vector<TensorView> &momentum_buffers,
                    const std::vector<TensorView> &model_copies, const SgdOptions &opt,
                    const float *inv_scale, const float *clip_coef, const float *found_inf,
                    const ExecContext &ctx) {
  const char *op = "fused_sgd_step";
  check_context(op, ctx);
  check_step_lists(op, params, grads, model_copies, ctx);
  if (opt.momentum != 0.0f) {
    check_list(op, "momentum_buffers", momentum_buffers, ctx, /*only_f32=*/true);
    check_pairs(op, "params", params, "momentum_buffers", momentum_buffers);
  }
  if (opt.nesterov && (opt.momentum <= 0.0f || opt.dampening != 0.0f))
    fail(op, -1, "nesterov momentum requires a momentum > 0 and zero dampening");
  if (opt.lr < 0.0f || opt.momentum < 0.0f || opt.weight_decay < 0.0f)
    fail(op, -1, "lr, momentum and weight_decay must be >= 0");
  check_step_scalars(op, inv_scale, clip_coef, found_inf, ctx);

  detail::SgdStep fn{};
  fn.scalars.inv_scale_ptr = inv_scale;
  fn.scalars.clip_coef_ptr = clip_coef;
  fn.scalars.found_inf_ptr = found_inf;
  fn.lr = opt.lr;
  fn.momentum = opt.momentum;
  fn.dampening = opt.dampening;
  fn.weight_decay = opt.weight_decay;
  fn.nesterov = opt.nesterov;
  fn.first_step = opt.first_step;
  fn.has_copy = !model_copies.empty();
  auto args = make_args(op, ctx);
  args.lists[0] = &params;
  args.lists[1] = &grads;
  args.lists[2] = opt.momentum != 0.0f ? &momentum_buffers : nullptr;
  args.lists[3] = fn.has_copy ? &model_copies : nullptr;
  run(fn, args);
}

void fused_adam_step(const std::vector<TensorView> &params, const std::vector<TensorView> &grads,
                     const std::vector<TensorView> &exp_avg,
                     const std::vector<TensorView> &exp_avg_sq,
                     const std::vector<TensorView> &model_copies, const AdamOptions &opt,
                     const float *inv_scale, const float *clip_coef, const float *found_inf,
                     const ExecContext &ctx) {
  const char *op = "fused_adam_step";
  check_context(op, ctx);
  check_step_lists(op, params, grads, model_copies, ctx);
  check_list(op, "exp_avg", exp_avg, ctx, /*only_f32=*/true);
  check_pairs(op, "params", params, "exp_avg", exp_avg);
  check_list(op, "exp_avg_sq", exp_avg_sq, ctx, /*only_f32=*/true);
  check_pairs(op, "params", params, "exp_avg_sq", exp_avg_sq);
  if (opt.step < 1)
    fail(op, -1, fmt::format("step must be >= 1 (the step number after this update), got {}",
                             opt.step));
  if (!(opt.beta1 >= 0.0f && opt.beta1 < 1.0f) || !(opt.beta2 >= 0.0f && opt.beta2 < 1.0f))
    fail(op, -1, "betas must be in [0, 1)");
  if (opt.lr < 0.0f || opt.eps < 0.0f || opt.weight_decay < 0.0f)
    fail(op, -1, "lr, eps and weight_decay must be >= 0");
  check_step_scalars(op, inv_scale, clip_coef, found_inf, ctx);

  detail::AdamStep fn{};
  fn.scalars.inv_scale_ptr = inv_scale;
  fn.scalars.clip_coef_ptr = clip_coef;
  fn.scalars.found_inf_ptr = found_inf;
  fn.lr = opt.lr;
  fn.beta1 = opt.beta1;
  fn.beta2 = opt.beta2;
  fn.eps = opt.eps;
  fn.weight_decay = opt.weight_decay;
  fn.adamw = opt.adamw;
  fn.has_copy = !model_copies.empty();
  // Bias corrections in double on the host, as PyTorch computes them from a host step count.
  const double step = static_cast<double>(opt.step);
  const double bias1 = 1.0 - std::pow(static_cast<double>(opt.beta1), step);
  const double bias2 = 1.0 - std::pow(static_cast<double>(opt.beta2), step);
  fn.step_size = static_cast<float>(static_cast<double>(opt.lr) / bias1);
  fn.inv_sqrt_bias2 = static_cast<float>(1.0 / std::sqrt(bias2));
  auto args = make_args(op, ctx);
  args.lists[0] = &params;
  args.lists[1] = &grads;
  args.lists[2] = &exp_avg;
  args.lists[3] = &exp_avg_sq;
  args.lists[4] = fn.has_copy ? &model_copies : nullptr;
  run(fn, args);
}

} // namespace amp
