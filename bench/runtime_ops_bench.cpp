// CPU throughput of the runtime's list ops, reported as a fraction of memcpy bandwidth measured in
// the same run, on lists shaped like real models: a few large tensors, and thousands of small ones.
#include "amp/runtime.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

namespace {

using namespace amp;

/// memcpy bandwidth (bytes read + written per second), best of several copies of 256 MiB, with one
/// thread and with all hardware threads each copying its own slice; the higher is the ceiling.
double g_memcpy_bw = 0.0;

double measure_memcpy_bandwidth() {
  const std::size_t bytes = std::size_t{256} << 20;
  std::vector<char> src(bytes, 1), dst(bytes, 2);
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  double best = 0.0;
  for (unsigned t : {1u, threads}) {
    for (int rep = 0; rep < 5; ++rep) {
      const auto start = std::chrono::steady_clock::now();
      std::vector<std::thread> pool;
      const std::size_t slice = bytes / t;
      for (unsigned i = 0; i < t; ++i)
        pool.emplace_back(
            [&, i] { std::memcpy(dst.data() + i * slice, src.data() + i * slice, slice); });
      for (auto &th : pool)
        th.join();
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      best = std::max(best, 2.0 * static_cast<double>(bytes) / s);
    }
  }
  benchmark::DoNotOptimize(dst.data());
  return best;
}

/// A list of `count` tensors of `size` elements, random non-zero values, kept alive with its views.
struct List {
  std::vector<std::vector<std::uint16_t>> b16;
  std::vector<std::vector<float>> f32;
  std::vector<TensorView> views;
  List(DType t, int count, std::int64_t size, float lo = 0.01f, float hi = 1.0f) {
    std::mt19937 rng(static_cast<std::uint32_t>(count * 7 + size));
    std::uniform_real_distribution<float> u(lo, hi);
    for (int i = 0; i < count; ++i) {
      if (t == DType::F32) {
        f32.emplace_back(static_cast<std::size_t>(size));
        for (float &x : f32.back())
          x = u(rng);
        views.push_back({f32.back().data(), t, size, {}});
      } else {
        // bf16/fp16 bit patterns of values in [0.5, 1): the exponent field 0x3f/0x38 region.
        b16.emplace_back(static_cast<std::size_t>(size));
        for (auto &x : b16.back())
          x = static_cast<std::uint16_t>((t == DType::BF16 ? 0x3f00u : 0x3800u) | (rng() & 0xffu));
        views.push_back({b16.back().data(), t, size, {}});
      }
    }
  }
};

struct Shape {
  int count;
  std::int64_t size;
};
// "Large": 4 x 4 Mi elements (a few big embedding/linear weights); "Small": 8192 x 1 Ki elements
// (biases, norms, small convs). Both 16 Mi / 8 Mi elements: far past the last-level cache.
const Shape kLarge{4, std::int64_t{4} << 20};
const Shape kSmall{8192, 1024};

Shape shape_of(const benchmark::State &state) { return state.range(0) == 0 ? kLarge : kSmall; }
DType dtype_of(const benchmark::State &state) { return static_cast<DType>(state.range(1)); }

void report(benchmark::State &state, double bytes_per_element) {
  const Shape s = shape_of(state);
  const double bytes =
      bytes_per_element * static_cast<double>(s.count) * static_cast<double>(s.size);
  state.SetBytesProcessed(
      static_cast<std::int64_t>(bytes * static_cast<double>(state.iterations())));
  state.counters["frac_of_memcpy"] = benchmark::Counter(
      bytes * static_cast<double>(state.iterations()) / g_memcpy_bw, benchmark::Counter::kIsRate);
  state.SetLabel(std::string(s.count == kLarge.count ? "large" : "small") + "/" +
                 dtype_name(dtype_of(state)));
}

const ExecContext kCpu{};

void BM_memcpy(benchmark::State &state) {
  const Shape s = shape_of(state);
  const std::size_t bytes = static_cast<std::size_t>(s.count * s.size) * 4;
  std::vector<char> a(bytes, 1), b(bytes, 2);
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(2 * bytes * state.iterations()));
  state.counters["frac_of_memcpy"] = benchmark::Counter(
      2.0 * static_cast<double>(bytes) * static_cast<double>(state.iterations()) / g_memcpy_bw,
      benchmark::Counter::kIsRate);
}

void BM_unscale_and_check(benchmark::State &state) {
  const Shape s = shape_of(state);
  List g(dtype_of(state), s.count, s.size);
  // inv_scale alternates between x and 1/x so values stay in range across iterations.
  float inv[2] = {0.5f, 2.0f};
  float found = 0.0f;
  int i = 0;
  for (auto _ : state)
    unscale_and_check(g.views, &inv[i++ & 1], &found, kCpu);
  report(state, 2.0 * static_cast<double>(dtype_size(dtype_of(state))));
}

void BM_global_norm(benchmark::State &state) {
  const Shape s = shape_of(state);
  List x(dtype_of(state), s.count, s.size);
  float norm = 0.0f;
  for (auto _ : state)
    global_norm(x.views, &norm, kCpu);
  benchmark::DoNotOptimize(norm);
  report(state, static_cast<double>(dtype_size(dtype_of(state))));
}

void BM_unscale_check_and_norm(benchmark::State &state) {
  const Shape s = shape_of(state);
  List g(dtype_of(state), s.count, s.size);
  float inv[2] = {0.5f, 2.0f};
  float found = 0.0f, norm = 0.0f;
  int i = 0;
  for (auto _ : state)
    unscale_check_and_norm(g.views, &inv[i++ & 1], &found, &norm, kCpu);
  report(state, 2.0 * static_cast<double>(dtype_size(dtype_of(state))));
}

void BM_clip_by_global_norm(benchmark::State &state) {
  const Shape s = shape_of(state);
  List g(dtype_of(state), s.count, s.size);
  const float norm = 1.0f; // coef 1: in-place clip that leaves the values as they are
  for (auto _ : state)
    clip_by_global_norm(g.views, g.views, 2.0f, &norm, ClipRule::PyTorch, nullptr, kCpu);
  report(state, 2.0 * static_cast<double>(dtype_size(dtype_of(state))));
}

/// Out of place into a second list of the same dtype: what amp::clip_by_global_norm runs (its
/// output list reused from the previous step's).
void BM_clip_by_global_norm_out_of_place(benchmark::State &state) {
  const Shape s = shape_of(state);
  List g(dtype_of(state), s.count, s.size), out(dtype_of(state), s.count, s.size);
  const float norm = 4.0f; // coef 0.5
  for (auto _ : state)
    clip_by_global_norm(g.views, out.views, 2.0f, &norm, ClipRule::MindSpore, nullptr, kCpu);
  report(state, 2.0 * static_cast<double>(dtype_size(dtype_of(state))));
}

void BM_cast_copy_to_bf16(benchmark::State &state) {
  const Shape s = shape_of(state);
  List src(dtype_of(state), s.count, s.size), dst(DType::BF16, s.count, s.size);
  for (auto _ : state)
    cast_copy(src.views, dst.views, kCpu);
  report(state, static_cast<double>(dtype_size(dtype_of(state))) + 2.0);
}

void BM_fused_sgd_step(benchmark::State &state) {
  const Shape s = shape_of(state);
  List p(DType::F32, s.count, s.size), g(dtype_of(state), s.count, s.size),
      buf(DType::F32, s.count, s.size);
  List copy(DType::BF16, s.count, s.size);
  SgdOptions o;
  o.lr = 1e-6f;
  o.momentum = 0.9f;
  const float inv = 1.0f / 1024, coef = 0.5f, found = 0.0f;
  for (auto _ : state)
    fused_sgd_step(p.views, g.views, buf.views, copy.views, o, &inv, &coef, &found, kCpu);
  // read p, g, buf; write p, buf, copy
  report(state, 4 + static_cast<double>(dtype_size(dtype_of(state))) + 4 + 4 + 4 + 2);
}

void BM_fused_adam_step(benchmark::State &state) {
  const Shape s = shape_of(state);
  List p(DType::F32, s.count, s.size), g(dtype_of(state), s.count, s.size),
      m(DType::F32, s.count, s.size), v(DType::F32, s.count, s.size),
      copy(DType::BF16, s.count, s.size);
  AdamOptions o;
  o.adamw = true;
  o.weight_decay = 0.01f;
  o.lr = 1e-6f;
  o.step = 10;
  const float inv = 1.0f / 1024, coef = 0.5f, found = 0.0f;
  for (auto _ : state)
    fused_adam_step(p.views, g.views, m.views, v.views, copy.views, o, &inv, &coef, &found, kCpu);
  // read p, g, m, v; write p, m, v, copy
  report(state, 4 + static_cast<double>(dtype_size(dtype_of(state))) + 4 + 4 + 4 + 4 + 4 + 2);
}

/// The whole fused chain: check+norm (read g), coefficient, Adam step (read p, g, m, v; write
/// p, m, v, copy). Reported against the bytes of both passes.
void BM_fused_chain_adam(benchmark::State &state) {
  const Shape s = shape_of(state);
  List p(DType::F32, s.count, s.size), g(dtype_of(state), s.count, s.size),
      m(DType::F32, s.count, s.size), v(DType::F32, s.count, s.size),
      copy(DType::BF16, s.count, s.size);
  AdamOptions o;
  o.lr = 1e-6f;
  o.step = 10;
  const float inv = 1.0f / 1024;
  float found = 0.0f, norm = 0.0f, coef = 0.0f;
  for (auto _ : state) {
    check_and_norm(g.views, &inv, &found, &norm, kCpu);
    clip_coefficient(1.0f, &norm, ClipRule::PyTorch, &coef, kCpu);
    fused_adam_step(p.views, g.views, m.views, v.views, copy.views, o, &inv, &coef, &found, kCpu);
  }
  const double gsize = static_cast<double>(dtype_size(dtype_of(state)));
  report(state, gsize + (4 + gsize + 4 + 4 + 4 + 4 + 4 + 2));
}

void shapes_and_dtypes(benchmark::internal::Benchmark *b) {
  for (int shape : {0, 1})
    for (int dt : {0, 1, 2})
      b->Args({shape, dt});
  b->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(0.3);
}

void shapes_only(benchmark::internal::Benchmark *b) {
  for (int shape : {0, 1})
    b->Args({shape, 0});
  b->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(0.3);
}

BENCHMARK(BM_memcpy)->Apply(shapes_only);
BENCHMARK(BM_unscale_and_check)->Apply(shapes_and_dtypes);
BENCHMARK(BM_global_norm)->Apply(shapes_and_dtypes);
BENCHMARK(BM_unscale_check_and_norm)->Apply(shapes_and_dtypes);
BENCHMARK(BM_clip_by_global_norm)->Apply(shapes_and_dtypes);
BENCHMARK(BM_clip_by_global_norm_out_of_place)->Apply(shapes_and_dtypes);
BENCHMARK(BM_cast_copy_to_bf16)->Apply(shapes_only);
BENCHMARK(BM_fused_sgd_step)->Apply(shapes_and_dtypes);
BENCHMARK(BM_fused_adam_step)->Apply(shapes_and_dtypes);
BENCHMARK(BM_fused_chain_adam)->Apply(shapes_and_dtypes);

} // namespace

int main(int argc, char **argv) {
  g_memcpy_bw = measure_memcpy_bandwidth();
  benchmark::AddCustomContext("memcpy_bandwidth_GBps", std::to_string(g_memcpy_bw / 1e9));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
