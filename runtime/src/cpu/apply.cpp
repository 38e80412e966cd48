// CPU multi-tensor apply: runs a functor from functors.h over lists of tensors, chunked and
// threaded.
//
// Work is cut into the same 2^16-element chunks as on the GPU; chunks are spread over OpenMP
// threads (dynamic schedule: tensors of very different sizes still balance). Inside a chunk, blocks
// of kBlock elements are widened into fp32 scratch arrays, passed through the functor, and narrowed
// back, so that the conversion loops and the functor loop each vectorise on their own.
//
// Norms: each chunk's sum of squares is reduced in fp32 over 8 lanes per block and then in fp64;
// chunk sums are combined in chunk order. The result depends only on the list, never on the thread
// count or schedule.
#include "../backend.h"
#include "../functors.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(_OPENMP)
#include <omp.h>
#endif

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define AMP_HAVE_F16C_PATH 1
#endif

// The chunk loop is compiled twice, for baseline x86-64 (SSE2) and for AVX2, and the loader picks
// one per CPU (an ifunc). AVX2 without FMA: the same IEEE operations in wider registers, so both
// clones give the same bits, and the norms stay deterministic across machines of either kind.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define AMP_CPU_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define AMP_CPU_CLONES
#endif

namespace amp::detail {

std::vector<Chunk> plan_chunks(const std::vector<TensorView> &tensors) {
  std::vector<Chunk> chunks;
  std::int64_t total = 0;
  for (const TensorView &t : tensors)
    total += chunk_count(t.numel);
  chunks.reserve(static_cast<std::size_t>(total));
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const std::int64_t n = tensors[i].numel;
    for (std::int64_t begin = 0; begin < n; begin += kChunkElements)
      chunks.push_back({static_cast<std::int64_t>(i), begin, std::min(kChunkElements, n - begin)});
  }
  return chunks;
}

namespace cpu {
namespace {

constexpr int kBlock = 512;
constexpr int kLanes = 8;

#if defined(AMP_HAVE_F16C_PATH)
// fp16 conversions are the one place where the portable bit manipulation costs more than the memory
// traffic; x86 CPUs since 2012 convert 8 at a time in hardware (F16C). Chosen at run time, so the
// library still runs on any x86-64. Same results as numeric.h: round to nearest even, NaN stays
// NaN.
__attribute__((target("avx,f16c"))) void widen_half_f16c(float *dst, const std::uint16_t *src,
                                                         int n) {
  int j = 0;
  for (; j + 8 <= n; j += 8)
    _mm256_storeu_ps(dst + j,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(src + j))));
  for (; j < n; ++j)
    dst[j] = half_to_float(src[j]);
}

__attribute__((target("avx,f16c"))) void narrow_half_f16c(std::uint16_t *dst, const float *src,
                                                          int n) {
  int j = 0;
  for (; j + 8 <= n; j += 8)
    _mm_storeu_si128(
        reinterpret_cast<__m128i *>(dst + j),
        _mm256_cvtps_ph(_mm256_loadu_ps(src + j), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; j < n; ++j)
    dst[j] = float_to_half(src[j]);
}

const bool kHasF16C = __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
#endif

void load_block(float *dst, const TensorView &t, std::int64_t begin, int n) {
  switch (t.dtype) {
  case DType::F32:
    std::memcpy(dst, static_cast<const float *>(t.data) + begin,
                sizeof(float) * static_cast<std::size_t>(n));
    return;
  case DType::F16: {
    const auto *src = static_cast<const std::uint16_t *>(t.data) + begin;
#if defined(AMP_HAVE_F16C_PATH)
    if (kHasF16C) {
      widen_half_f16c(dst, src, n);
      return;
    }
#endif
    for (int j = 0; j < n; ++j)
      dst[j] = half_to_float(src[j]);
    return;
  }
  case DType::BF16: {
    const auto *src = static_cast<const std::uint16_t *>(t.data) + begin;
    for (int j = 0; j < n; ++j)
      dst[j] = bfloat16_to_float(src[j]);
    return;
  }
  }
}

void store_block(const TensorView &t, std::int64_t begin, const float *src, int n) {
  switch (t.dtype) {
  case DType::F32:
    std::memcpy(static_cast<float *>(t.data) + begin, src,
                sizeof(float) * static_cast<std::size_t>(n));
    return;
  case DType::F16: {
    auto *dst = static_cast<std::uint16_t *>(t.data) + begin;
#if defined(AMP_HAVE_F16C_PATH)
    if (kHasF16C) {
      narrow_half_f16c(dst, src, n);
      return;
    }
#endif
    for (int j = 0; j < n; ++j)
      dst[j] = float_to_half(src[j]);
    return;
  }
  case DType::BF16: {
    auto *dst = static_cast<std::uint16_t *>(t.data) + begin;
    for (int j = 0; j < n; ++j)
      dst[j] = float_to_bfloat16(src[j]);
    return;
  }
  }
}

struct ChunkResult {
  double sum_squares = 0.0;
  unsigned nonfinite = 0;
};

template <class Fn>
AMP_CPU_CLONES ChunkResult run_chunk(const Fn &fn, const ApplyArgs &args, const Chunk &chunk) {
  constexpr int L = Fn::kLists;
  alignas(64) float values[L][kBlock] = {};
  alignas(64) float squares[kBlock];
  const TensorView *views[L] = {};
  bool reads[L] = {}, writes[L] = {};
  for (int l = 0; l < L; ++l) {
    if (!args.lists[l])
      continue;
    views[l] = &(*args.lists[l])[static_cast<std::size_t>(chunk.tensor)];
    reads[l] = fn.reads(l);
    writes[l] = fn.writes(l);
  }
  ChunkResult result;
  for (std::int64_t off = 0; off < chunk.size; off += kBlock) {
    const int n = static_cast<int>(std::min<std::int64_t>(kBlock, chunk.size - off));
    const std::int64_t begin = chunk.begin + off;
    for (int l = 0; l < L; ++l)
      if (reads[l])
        load_block(values[l], *views[l], begin, n);
    unsigned nonfinite = 0;
    for (int j = 0; j < n; ++j) {
      float v[L];
      for (int l = 0; l < L; ++l)
        v[l] = values[l][j];
      ElementStat s;
      fn(v, s);
      for (int l = 0; l < L; ++l)
        values[l][j] = v[l];
      squares[j] = s.square;
      nonfinite |= s.nonfinite;
    }
    result.nonfinite |= nonfinite;
    for (int l = 0; l < L; ++l)
      if (writes[l])
        store_block(*views[l], begin, values[l], n);
    if (args.norm) {
      // Fixed-shape reduction: 8 fp32 lanes over the block, then the lanes in fp64.
      float lanes[kLanes] = {};
      int j = 0;
      for (; j + kLanes <= n; j += kLanes)
        for (int k = 0; k < kLanes; ++k)
          lanes[k] += squares[j + k];
      for (; j < n; ++j)
        lanes[j % kLanes] += squares[j];
      double block = 0.0;
      for (int k = 0; k < kLanes; ++k)
        block += static_cast<double>(lanes[k]);
      result.sum_squares += block;
    }
  }
  return result;
}

/// Threads for a call: below ~4 chunks of work, forking costs more than it saves.
int thread_count(std::int64_t elements, int requested) {
#if defined(_OPENMP)
  const int available = requested > 0 ? requested : omp_get_max_threads();
  if (elements < 4 * kChunkElements)
    return 1;
  return std::max(1, available);
#else
  (void)elements;
  (void)requested;
  return 1;
#endif
}

} // namespace

template <class Fn> void apply(const Fn &fn_in, const ApplyArgs &args) {
  Fn fn = fn_in;
  if (!fn.resolve())
    return;
  const std::vector<Chunk> chunks = plan_chunks(*args.lists[0]);
  const auto count = static_cast<std::int64_t>(chunks.size());
  std::int64_t elements = 0;
  for (const TensorView &t : *args.lists[0])
    elements += t.numel;

  std::vector<double> partial(args.norm ? chunks.size() : 0);
  unsigned nonfinite = 0;
  const int threads = thread_count(elements, args.ctx.threads);
#if defined(_OPENMP)
#pragma omp parallel for schedule(dynamic, 1) reduction(|                                          \
                                                        : nonfinite)                               \
    num_threads(threads) if (threads > 1)
#endif
  for (std::int64_t i = 0; i < count; ++i) {
    const ChunkResult r = run_chunk(fn, args, chunks[static_cast<std::size_t>(i)]);
    if (args.norm)
      partial[static_cast<std::size_t>(i)] = r.sum_squares;
    nonfinite |= r.nonfinite;
  }
  (void)threads;

  if (args.found_inf && nonfinite)
    *args.found_inf = 1.0f;
  if (args.norm) {
    double total = 0.0;
    for (double p : partial)
      total += p;
    *args.norm = static_cast<float>(std::sqrt(total));
  }
}

template void apply(const UnscaleAndCheck &, const ApplyArgs &);
template void apply(const SumOfSquares &, const ApplyArgs &);
template void apply(const ClipByNorm &, const ApplyArgs &);
template void apply(const CastCopy &, const ApplyArgs &);
template void apply(const SgdStep &, const ApplyArgs &);
template void apply(const AdamStep &, const ApplyArgs &);

void clip_coefficient(const float *norm, float clip_norm, ClipRule rule, float *coef_out) {
  *coef_out = clip_coefficient_of(*norm, clip_norm, rule == ClipRule::PyTorch);
}

void update_scale(float *scale, std::int32_t *growth_tracker, const float *found_inf,
                  float growth_factor, float backoff_factor, std::int32_t growth_interval) {
  update_scale_rule(scale, growth_tracker, *found_inf, growth_factor, backoff_factor,
                    growth_interval);
}

void inverse_scale(const float *scale, float *inv_scale) { *inv_scale = inverse_scale_of(*scale); }

} // namespace cpu
} // namespace amp::detail
