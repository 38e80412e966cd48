// A C ABI over the runtime's CUDA ops for the device benchmark: Python (ctypes) passes raw device
// pointers from torch tensors, so the same tensors are timed through amp and through PyTorch.
// Every function returns 0, or -1 with the message available from amp_capi_last_error().
#include "amp/runtime.h"

#include <cstdint>
#include <exception>
#include <string>
#include <vector>

namespace {

thread_local std::string g_last_error;

std::vector<amp::TensorView> make_list(void *const *ptrs, const std::int64_t *numels,
                                       const std::int32_t *dtypes, int count, int device) {
  std::vector<amp::TensorView> list;
  if (!ptrs)
    return list;
  for (int i = 0; i < count; ++i)
    list.push_back(
        {ptrs[i], static_cast<amp::DType>(dtypes[i]), numels[i], {amp::DeviceKind::CUDA, device}});
  return list;
}

amp::ExecContext context(int device, void *stream) {
  amp::ExecContext c;
  c.device = {amp::DeviceKind::CUDA, device};
  c.stream = stream;
  return c;
}

template <class F> int guarded(F &&f) {
  try {
    f();
    return 0;
  } catch (const std::exception &e) {
    g_last_error = e.what();
    return -1;
  }
}

} // namespace

extern "C" {

const char *amp_capi_last_error() { return g_last_error.c_str(); }
int amp_capi_cuda_available() { return amp::cuda_available() ? 1 : 0; }

int amp_capi_unscale_and_check(void *const *ptrs, const std::int64_t *numels,
                               const std::int32_t *dtypes, int count, const float *inv_scale,
                               float *found_inf, int device, void *stream) {
  return guarded([&] {
    amp::unscale_and_check(make_list(ptrs, numels, dtypes, count, device), inv_scale, found_inf,
                           context(device, stream));
  });
}

int amp_capi_global_norm(void *const *ptrs, const std::int64_t *numels, const std::int32_t *dtypes,
                         int count, float *norm, int device, void *stream) {
  return guarded([&] {
    amp::global_norm(make_list(ptrs, numels, dtypes, count, device), norm, context(device, stream));
  });
}

int amp_capi_unscale_check_and_norm(void *const *ptrs, const std::int64_t *numels,
                                    const std::int32_t *dtypes, int count, const float *inv_scale,
                                    float *found_inf, float *norm, int device, void *stream) {
  return guarded([&] {
    amp::unscale_check_and_norm(make_list(ptrs, numels, dtypes, count, device), inv_scale,
                                found_inf, norm, context(device, stream));
  });
}

int amp_capi_check_and_norm(void *const *ptrs, const std::int64_t *numels,
                            const std::int32_t *dtypes, int count, const float *inv_scale,
                            float *found_inf, float *norm, int device, void *stream) {
  return guarded([&] {
    amp::check_and_norm(make_list(ptrs, numels, dtypes, count, device), inv_scale, found_inf, norm,
                        context(device, stream));
  });
}

/// In place (out_ptrs == null) or out of place into tensors of dtypes out_dtypes.
int amp_capi_clip_by_global_norm(void *const *ptrs, void *const *out_ptrs,
                                 const std::int64_t *numels, const std::int32_t *dtypes,
                                 const std::int32_t *out_dtypes, int count, float clip_norm,
                                 const float *norm, int pytorch_rule, float *coef_out, int device,
                                 void *stream) {
  return guarded([&] {
    const auto in = make_list(ptrs, numels, dtypes, count, device);
    const auto out = out_ptrs ? make_list(out_ptrs, numels, out_dtypes, count, device) : in;
    amp::clip_by_global_norm(in, out, clip_norm, norm,
                             pytorch_rule ? amp::ClipRule::PyTorch : amp::ClipRule::MindSpore,
                             coef_out, context(device, stream));
  });
}

int amp_capi_clip_coefficient(float clip_norm, const float *norm, int pytorch_rule, float *coef_out,
                              int device, void *stream) {
  return guarded([&] {
    amp::clip_coefficient(clip_norm, norm,
                          pytorch_rule ? amp::ClipRule::PyTorch : amp::ClipRule::MindSpore,
                          coef_out, context(device, stream));
  });
}

int amp_capi_update_scale(float *scale, std::int32_t *tracker, const float *found_inf, float growth,
                          float backoff, std::int32_t interval, int device, void *stream) {
  return guarded([&] {
    amp::update_scale(scale, tracker, found_inf, growth, backoff, interval,
                      context(device, stream));
  });
}

int amp_capi_inverse_scale(const float *scale, float *inv_scale, int device, void *stream) {
  return guarded([&] { amp::inverse_scale(scale, inv_scale, context(device, stream)); });
}

int amp_capi_cast_copy(void *const *src, const std::int32_t *src_dtypes, void *const *dst,
                       const std::int32_t *dst_dtypes, const std::int64_t *numels, int count,
                       int device, void *stream) {
  return guarded([&] {
    amp::cast_copy(make_list(src, numels, src_dtypes, count, device),
                   make_list(dst, numels, dst_dtypes, count, device), context(device, stream));
  });
}

/// params/exp_avg/exp_avg_sq are f32 (dtype code 0); copies may be null.
int amp_capi_fused_adam_step(void *const *params, void *const *grads, void *const *exp_avg,
                             void *const *exp_avg_sq, void *const *copies,
                             const std::int64_t *numels, const std::int32_t *grad_dtypes,
                             const std::int32_t *copy_dtypes, int count, float lr, float beta1,
                             float beta2, float eps, float weight_decay, int adamw,
                             std::int64_t step, const float *inv_scale, const float *clip_coef,
                             const float *found_inf, int device, void *stream) {
  return guarded([&] {
    const std::vector<std::int32_t> f32(static_cast<std::size_t>(count), 0);
    amp::AdamOptions o;
    o.lr = lr, o.beta1 = beta1, o.beta2 = beta2, o.eps = eps, o.weight_decay = weight_decay;
    o.adamw = adamw != 0;
    o.step = step;
    amp::fused_adam_step(make_list(params, numels, f32.data(), count, device),
                         make_list(grads, numels, grad_dtypes, count, device),
                         make_list(exp_avg, numels, f32.data(), count, device),
                         make_list(exp_avg_sq, numels, f32.data(), count, device),
                         make_list(copies, numels, copy_dtypes, count, device), o, inv_scale,
                         clip_coef, found_inf, context(device, stream));
  });
}

int amp_capi_fused_sgd_step(void *const *params, void *const *grads, void *const *momentum_buffers,
                            void *const *copies, const std::int64_t *numels,
                            const std::int32_t *grad_dtypes, const std::int32_t *copy_dtypes,
                            int count, float lr, float momentum, float dampening,
                            float weight_decay, int nesterov, int first_step,
                            const float *inv_scale, const float *clip_coef, const float *found_inf,
                            int device, void *stream) {
  return guarded([&] {
    const std::vector<std::int32_t> f32(static_cast<std::size_t>(count), 0);
    amp::SgdOptions o;
    o.lr = lr, o.momentum = momentum, o.dampening = dampening, o.weight_decay = weight_decay;
    o.nesterov = nesterov != 0;
    o.first_step = first_step != 0;
    amp::fused_sgd_step(make_list(params, numels, f32.data(), count, device),
                        make_list(grads, numels, grad_dtypes, count, device),
                        make_list(momentum_buffers, numels, f32.data(), count, device),
                        make_list(copies, numels, copy_dtypes, count, device), o, inv_scale,
                        clip_coef, found_inf, context(device, stream));
  });
}

/// Row-major C[m,n] = alpha * op(A) op(B) + beta * C (+ bias) (ReLU); bias may be null.
int amp_capi_gemm(void *a, void *b, void *c, void *bias, std::int32_t ab_dtype,
                  std::int32_t c_dtype, std::int64_t m, std::int64_t n, std::int64_t k, int trans_a,
                  int trans_b, float alpha, float beta, int relu, int device, void *stream) {
  return guarded([&] {
    const amp::Device d{amp::DeviceKind::CUDA, device};
    amp::GemmArgs g;
    g.a = {a, static_cast<amp::DType>(ab_dtype), m * k, d};
    g.b = {b, static_cast<amp::DType>(ab_dtype), k * n, d};
    g.c = {c, static_cast<amp::DType>(c_dtype), m * n, d};
    if (bias)
      g.bias = {bias, static_cast<amp::DType>(c_dtype), n, d};
    g.m = m, g.n = n, g.k = k;
    g.trans_a = trans_a != 0, g.trans_b = trans_b != 0;
    g.alpha = alpha, g.beta = beta, g.relu = relu != 0;
    amp::gemm(g, context(device, stream));
  });
}

} // extern "C"
