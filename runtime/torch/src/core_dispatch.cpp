// Torch tensors to runtime-core TensorViews, one core call per device (see core_dispatch.h).
#include "core_dispatch.h"

#include <amp/runtime.h>

#include <fmt/format.h>

#if defined(AMP_TORCH_CUDA)
#include <c10/cuda/CUDAStream.h>
#endif

#include <string>

namespace amp::detail {
namespace {

bool core_dtype(at::ScalarType t, DType *out) {
  switch (t) {
  case at::kFloat:
    *out = DType::F32;
    return true;
  case at::kHalf:
    *out = DType::F16;
    return true;
  case at::kBFloat16:
    *out = DType::BF16;
    return true;
  default:
    return false;
  }
}

bool core_device(const at::Device &d) {
  if (d.is_cpu())
    return true;
#if defined(AMP_TORCH_CUDA)
  return d.is_cuda() && amp::cuda_available();
#else
  return false;
#endif
}

bool core_takes_one(const at::Tensor &t) {
  DType dt;
  return t.defined() && core_dtype(t.scalar_type(), &dt) && t.is_contiguous() &&
         core_device(t.device());
}

Device core_device_of(const at::Device &d) {
  Device out;
  out.kind = d.is_cuda() ? DeviceKind::CUDA : DeviceKind::CPU;
  out.index = d.is_cuda() ? static_cast<int>(d.index()) : 0;
  return out;
}

TensorView view_of(const at::Tensor &t) {
  TensorView v;
  v.data = t.data_ptr();
  core_dtype(t.scalar_type(), &v.dtype);
  v.numel = t.numel();
  v.device = core_device_of(t.device());
  return v;
}

std::vector<TensorView> views_of(const std::vector<at::Tensor> &ts) {
  std::vector<TensorView> out;
  out.reserve(ts.size());
  for (const auto &t : ts)
    out.push_back(view_of(t));
  return out;
}

/// The device and, on CUDA, the current stream of the caller (the core runs in stream order).
ExecContext context_of(const at::Device &d) {
  ExecContext ctx;
  ctx.device = core_device_of(d);
#if defined(AMP_TORCH_CUDA)
  if (d.is_cuda())
    ctx.stream = c10::cuda::getCurrentCUDAStream(d.index()).stream();
#endif
  return ctx;
}

void check_scalar(const char *op, const char *what, const at::Tensor &s, at::ScalarType dtype) {
  if (!s.defined() || s.numel() != 1 || s.scalar_type() != dtype || !s.is_contiguous())
    throw Error(fmt::format("amp::torch {}: {} must be a contiguous one-element tensor of {}", op,
                            what, c10::toString(dtype)));
}

} // namespace

bool core_takes(const std::vector<at::Tensor> &ts) {
  for (const auto &t : ts)
    if (!core_takes_one(t))
      return false;
  return true;
}

void unscale_and_check(const std::vector<at::Tensor> &grads, const at::Tensor &inv_scale,
                       const at::Tensor &found_inf) {
  check_scalar("unscale_and_check", "inv_scale", inv_scale, at::kFloat);
  check_scalar("unscale_and_check", "found_inf", found_inf, at::kFloat);
  if (grads.empty())
    return;
  if (core_takes(grads) && core_takes_one(inv_scale) && core_takes_one(found_inf)) {
    amp::unscale_and_check(views_of(grads), inv_scale.data_ptr<float>(),
                           found_inf.data_ptr<float>(), context_of(found_inf.device()));
    return;
  }
  c10::AutoGradMode no_grad(false);
  for (const auto &g : grads) {
    auto g32 = g.to(at::kFloat);
    auto nonfinite = at::logical_not(at::isfinite(g32)).any().to(at::kFloat).reshape_as(found_inf);
    found_inf.copy_(at::maximum(found_inf, nonfinite));
    g.copy_(g32 * inv_scale.reshape({}));
  }
}

at::Tensor unscale_check_and_norm(const std::vector<at::Tensor> &grads,
                                  const at::Tensor &inv_scale, const at::Tensor &found_inf) {
  check_scalar("unscale_check_and_norm", "inv_scale", inv_scale, at::kFloat);
  check_scalar("unscale_check_and_norm", "found_inf", found_inf, at::kFloat);
  const auto device = found_inf.device();
  if (!grads.empty() && core_takes(grads) && core_takes_one(inv_scale) &&
      core_takes_one(found_inf)) {
    auto norm = at::zeros({}, at::TensorOptions().dtype(at::kFloat).device(device));
    amp::unscale_check_and_norm(views_of(grads), inv_scale.data_ptr<float>(),
                                found_inf.data_ptr<float>(), norm.data_ptr<float>(),
                                context_of(device));
    return norm;
  }
  unscale_and_check(grads, inv_scale, found_inf);
  return global_norm(grads, device);
}

at::Tensor global_norm(const std::vector<at::Tensor> &xs, const at::Device &device) {
  auto norm = at::zeros({}, at::TensorOptions().dtype(at::kFloat).device(device));
  if (xs.empty())
    return norm;
  if (core_takes(xs) && core_device(device)) {
    amp::global_norm(views_of(xs), norm.data_ptr<float>(), context_of(device));
    return norm;
  }
  c10::AutoGradMode no_grad(false);
  auto acc_type = device.is_cpu() ? at::kDouble : at::kFloat;
  auto sum = at::zeros({}, at::TensorOptions().dtype(acc_type).device(device));
  for (const auto &x : xs)
    sum += x.to(acc_type).pow(2).sum();
  norm.copy_(sum.sqrt());
  return norm;
}

void clip_by_global_norm(const std::vector<at::Tensor> &in, const std::vector<at::Tensor> &out,
                         double clip_norm, const at::Tensor &norm) {
  check_scalar("clip_by_global_norm", "norm", norm, at::kFloat);
  if (in.empty())
    return;
  if (core_takes(in) && core_takes(out) && core_takes_one(norm)) {
    amp::clip_by_global_norm(views_of(in), views_of(out), static_cast<float>(clip_norm),
                             norm.data_ptr<float>(), ClipRule::MindSpore, nullptr,
                             context_of(norm.device()));
    return;
  }
  torch_fallback::clip_by_global_norm(in, out, clip_norm, norm);
}

void inverse_scale(const at::Tensor &scale, const at::Tensor &inv_scale) {
  check_scalar("inverse_scale", "scale", scale, at::kFloat);
  check_scalar("inverse_scale", "inv_scale", inv_scale, at::kFloat);
  if (core_takes_one(scale) && core_takes_one(inv_scale) && scale.device() == inv_scale.device()) {
    amp::inverse_scale(scale.data_ptr<float>(), inv_scale.data_ptr<float>(),
                       context_of(scale.device()));
    return;
  }
  c10::AutoGradMode no_grad(false);
  inv_scale.copy_(scale.to(at::kDouble).reciprocal().to(at::kFloat).reshape_as(inv_scale));
}

void update_scale(const at::Tensor &scale, const at::Tensor &growth_tracker,
                  const at::Tensor &found_inf, double growth_factor, double backoff_factor,
                  std::int64_t growth_interval) {
  check_scalar("update_scale", "scale", scale, at::kFloat);
  check_scalar("update_scale", "growth_tracker", growth_tracker, at::kInt);
  check_scalar("update_scale", "found_inf", found_inf, at::kFloat);
  if (core_device(scale.device())) {
    amp::update_scale(scale.data_ptr<float>(), growth_tracker.data_ptr<std::int32_t>(),
                      found_inf.data_ptr<float>(), static_cast<float>(growth_factor),
                      static_cast<float>(backoff_factor),
                      static_cast<std::int32_t>(growth_interval), context_of(scale.device()));
    return;
  }
  torch_fallback::update_scale(scale, growth_tracker, found_inf, growth_factor, backoff_factor,
                               growth_interval);
}

// ---- torch fallbacks: the same rules as the core's functors.h, in torch ops ---------------------
namespace torch_fallback {

void clip_by_global_norm(const std::vector<at::Tensor> &in, const std::vector<at::Tensor> &out,
                         double clip_norm, const at::Tensor &norm) {
  c10::AutoGradMode no_grad(false);
  // clip_coefficient_of: NaN norm -> NaN coefficient (torch.maximum propagates it), inf -> 0.
  auto clip = at::full({}, clip_norm, norm.options());
  auto coef = clip / at::maximum(norm.reshape({}), clip);
  for (std::size_t i = 0; i < in.size(); ++i)
    out[i].copy_(in[i].to(at::kFloat) * coef);
}

void update_scale(const at::Tensor &scale, const at::Tensor &growth_tracker,
                  const at::Tensor &found_inf, double growth_factor, double backoff_factor,
                  std::int64_t growth_interval) {
  c10::AutoGradMode no_grad(false);
  // update_scale_rule: found_inf set when != 0 (NaN too); grow on exactly growth_interval.
  auto inf = found_inf.reshape({}) != 0;
  auto tracker = at::where(inf, at::zeros_like(growth_tracker), growth_tracker + 1);
  auto grow = at::logical_and(at::logical_not(inf), tracker == growth_interval);
  auto grown = scale * static_cast<float>(growth_factor);
  auto grown_ok = at::where(at::isfinite(grown), grown, scale);
  auto new_scale = at::where(inf, scale * static_cast<float>(backoff_factor),
                             at::where(grow, grown_ok, scale));
  scale.copy_(new_scale);
  growth_tracker.copy_(at::where(grow, at::zeros_like(tracker), tracker));
}

} // namespace torch_fallback

void cast_copy(const std::vector<at::Tensor> &src, const std::vector<at::Tensor> &dst) {
  if (src.size() != dst.size())
    throw Error("amp::torch cast_copy: the lists differ in length");
  if (src.empty())
    return;
  if (core_takes(src) && core_takes(dst)) {
    amp::cast_copy(views_of(src), views_of(dst), context_of(src.front().device()));
    return;
  }
  c10::AutoGradMode no_grad(false);
  for (std::size_t i = 0; i < src.size(); ++i)
    dst[i].copy_(src[i]);
}

} // namespace amp::detail
