// CPU reference GEMM: widen to fp32, accumulate in fp32 row by row (i-p-j order, so the inner loop
// is a vectorisable axpy rather than a reduction), apply alpha, beta, bias and ReLU, narrow once.
#include "../backend.h"
#include "../functors.h"

#include <algorithm>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace amp::detail::cpu {
namespace {

float load_at(const TensorView &t, std::int64_t i) {
  switch (t.dtype) {
  case DType::F32:
    return static_cast<const float *>(t.data)[i];
  case DType::F16:
    return half_to_float(static_cast<const std::uint16_t *>(t.data)[i]);
  case DType::BF16:
    return bfloat16_to_float(static_cast<const std::uint16_t *>(t.data)[i]);
  }
  return 0.0f;
}

void store_at(const TensorView &t, std::int64_t i, float v) {
  switch (t.dtype) {
  case DType::F32:
    static_cast<float *>(t.data)[i] = v;
    return;
  case DType::F16:
    static_cast<std::uint16_t *>(t.data)[i] = float_to_half(v);
    return;
  case DType::BF16:
    static_cast<std::uint16_t *>(t.data)[i] = float_to_bfloat16(v);
    return;
  }
}

} // namespace

void gemm(const GemmArgs &g, int threads) {
  const std::int64_t m = g.m, n = g.n, k = g.k;
  // op(B) as a dense fp32 [k][n] matrix, op(A) read element by element.
  std::vector<float> b(static_cast<std::size_t>(k * n));
  for (std::int64_t p = 0; p < k; ++p)
    for (std::int64_t j = 0; j < n; ++j)
      b[static_cast<std::size_t>(p * n + j)] = load_at(g.b, g.trans_b ? j * k + p : p * n + j);
  const bool has_bias = g.bias.data != nullptr;
  (void)threads;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)                                                          \
    num_threads(worker_threads(threads))                                                           \
        if (static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) > (1 << 18))
#endif
  for (std::int64_t i = 0; i < m; ++i) {
    std::vector<float> acc(static_cast<std::size_t>(n), 0.0f);
    for (std::int64_t p = 0; p < k; ++p) {
      const float a = load_at(g.a, g.trans_a ? p * m + i : i * k + p);
      const float *brow = b.data() + p * n;
      for (std::int64_t j = 0; j < n; ++j)
        acc[static_cast<std::size_t>(j)] += a * brow[j];
    }
    for (std::int64_t j = 0; j < n; ++j) {
      float v = g.alpha * acc[static_cast<std::size_t>(j)];
      if (g.beta != 0.0f)
        v += g.beta * load_at(g.c, i * n + j);
      if (has_bias)
        v += load_at(g.bias, j);
      if (g.relu)
        v = std::max(v, 0.0f);
      store_at(g.c, i * n + j, v);
    }
  }
}

} // namespace amp::detail::cpu
