// CPU multi-tensor apply: runs a functor from functors.h over lists of tensors, chunked and
// threaded.
//
// Work is cut into the same 2^16-element chunks as on the GPU; chunks are spread over OpenMP
// threads (dynamic schedule: tensors of very different sizes still balance). Inside a chunk, blocks
// of kBlock elements of fp16/bf16 lists are widened into fp32 scratch arrays, passed through the
// functor, and narrowed back, so that the conversion loops and the functor loop each vectorise on
// their own; fp32 lists are read and written in place (no copy through scratch).
//
// Norms: each chunk's sum of squares is reduced in fp32 over 8 lanes per block and then in fp64;
// chunk sums are combined in chunk order. The result depends only on the list, never on the thread
// count or schedule.
#include "../backend.h"
#include "../functors.h"
#include "../op_table.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>
#include <utility>

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

// Inlined into each clone of run_chunk, so that the conversion loops get its wider vectors.
[[gnu::always_inline]] inline void load_block(float *dst, const TensorView &t, std::int64_t begin,
                                             int n) {
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

[[gnu::always_inline]] inline void store_block(const TensorView &t, std::int64_t begin,
                                              const float *src, int n) {
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

/// What a block of a list is read from when the functor does not read it (an output-only list or
/// an absent one): zeros, the same for every block, so that nothing depends on an earlier block.
alignas(64) const float kZeros[kBlock] = {};

/// Whether two lists of the chunk share memory other than element for element (the same pointer
/// and dtype, as an in-place clip's in and out): then a write to one could change what the other
/// reads at another index, and the chunk goes through the scratch blocks as a whole.
template <int L>
bool overlaps_unevenly(const TensorView *const (&views)[L], const bool (&writes)[L],
                       const Chunk &chunk) {
  auto range = [&](const TensorView &t) {
    const auto *base = static_cast<const char *>(t.data);
    const std::size_t size = dtype_size(t.dtype);
    return std::pair<const char *, const char *>(
        base + static_cast<std::size_t>(chunk.begin) * size,
        base + static_cast<std::size_t>(chunk.begin + chunk.size) * size);
  };
  for (int a = 0; a < L; ++a)
    for (int b = a + 1; b < L; ++b) {
      if (!views[a] || !views[b] || !(writes[a] || writes[b]))
        continue;
      if (views[a]->data == views[b]->data && views[a]->dtype == views[b]->dtype)
        continue;
      const auto ra = range(*views[a]), rb = range(*views[b]);
      if (ra.first < rb.second && rb.first < ra.second)
        return true;
    }
  return false;
}

template <class Fn>
AMP_CPU_CLONES ChunkResult run_chunk(const Fn &fn, const ApplyArgs &args, const Chunk &chunk) {
  constexpr int L = Fn::kLists;
  // A local copy: the stores through the lists' pointers cannot alias it, so its options stay
  // loop-invariant (GCC then unswitches the selects on them and vectorises the element loop).
  const Fn f = fn;
  // fp16/bf16 blocks widened to fp32 (and rounded back after the functor), and the sink for the
  // values of lists that are not stored. fp32 lists are read and written where they are.
  alignas(64) float values[L][kBlock];
  alignas(64) float squares[kBlock];
  const TensorView *views[L] = {};
  bool reads[L] = {}, writes[L] = {}, direct[L] = {};
  for (int l = 0; l < L; ++l) {
    if (!args.lists[l])
      continue;
    views[l] = &(*args.lists[l])[static_cast<std::size_t>(chunk.tensor)];
    reads[l] = fn.reads(l);
    writes[l] = fn.writes(l);
    direct[l] = views[l]->dtype == DType::F32;
  }
  if (overlaps_unevenly(views, writes, chunk))
    for (bool &d : direct)
      d = false;
  ChunkResult result;
  for (std::int64_t off = 0; off < chunk.size; off += kBlock) {
    const int n = static_cast<int>(std::min<std::int64_t>(kBlock, chunk.size - off));
    const std::int64_t begin = chunk.begin + off;
    const float *src[L];
    float *dst[L];
    for (int l = 0; l < L; ++l) {
      if (direct[l]) {
        float *p = static_cast<float *>(views[l]->data) + begin;
        src[l] = reads[l] ? p : kZeros;
        dst[l] = writes[l] ? p : values[l];
        continue;
      }
      if (reads[l])
        load_block(values[l], *views[l], begin, n);
      src[l] = reads[l] ? values[l] : kZeros;
      dst[l] = values[l];
    }
    unsigned nonfinite = 0;
    // A list may be read and written through the same pointer (in place), element j only at
    // iteration j: no dependence between iterations, which is what ivdep asserts. Uneven overlaps
    // never get here (overlaps_unevenly).
#if defined(__clang__)
#pragma clang loop vectorize(assume_safety)
#elif defined(__GNUC__)
#pragma GCC ivdep
#endif
    for (int j = 0; j < n; ++j) {
      float v[L];
      for (int l = 0; l < L; ++l)
        v[l] = src[l][j];
      ElementStat s;
      f(v, s);
      for (int l = 0; l < L; ++l)
        dst[l][j] = v[l];
      squares[j] = s.square;
      nonfinite |= s.nonfinite;
    }
    result.nonfinite |= nonfinite;
    for (int l = 0; l < L; ++l)
      if (writes[l] && !direct[l])
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
  if (elements < 4 * kChunkElements)
    return 1;
  return worker_threads(requested);
}

} // namespace

int worker_threads(int requested) {
#if defined(_OPENMP)
  const int most = std::max({1, omp_get_num_procs(), omp_get_max_threads()});
  return requested > 0 ? std::min(requested, most) : std::max(1, omp_get_max_threads());
#else
  (void)requested;
  return 1;
#endif
}

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

// Every list operation of op_table.h.
#define AMP_INSTANTIATE_APPLY(Functor, entry) template void apply(const Functor &, const ApplyArgs &);
AMP_LIST_OPS(AMP_INSTANTIATE_APPLY)
#undef AMP_INSTANTIATE_APPLY
#define AMP_CHECK_LISTS(Functor, entry)                                                            \
  static_assert(Functor::kLists >= 1 && Functor::kLists <= int(std::tuple_size_v<decltype(ApplyArgs::lists)>), \
                #Functor " walks more lists than ApplyArgs holds");
AMP_LIST_OPS(AMP_CHECK_LISTS)
#undef AMP_CHECK_LISTS

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
