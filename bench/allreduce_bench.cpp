// The cost of reducing explicit grads across ranks: amp::all_reduce_grads (flat buckets, one
// collective each) against the hand-written loop it replaces (one all-reduce and one divide per
// parameter), on Gloo over loopback. Run one process per rank: bench/allreduce_bench.py.
#include <amp/torch.h>
#include <torch/torch.h>

#include "gloo_group.h"

#include <benchmark/benchmark.h>

#include <vector>

namespace {

c10::intrusive_ptr<c10d::ProcessGroupGloo> &group() {
  static auto pg = e2e::gloo_group_from_env("bench");
  return pg;
}

/// Grads shaped like a model: 0 the e2e MLP (6 tensors, 27 KB), 1 eight MLP blocks of width 256
/// with a norm each (48 tensors, 16.8 MB: small biases and norm weights next to large matrices).
std::vector<torch::Tensor> model_grads(int model) {
  torch::manual_seed(0);
  std::vector<std::vector<int64_t>> shapes;
  if (model == 0) {
    shapes = {{64, 32}, {64}, {64, 64}, {64}, {10, 64}, {10}};
  } else {
    for (int layer = 0; layer < 8; ++layer)
      for (auto shape : std::vector<std::vector<int64_t>>{
               {256}, {256}, {1024, 256}, {1024}, {256, 1024}, {256}})
        shapes.push_back(shape);
  }
  std::vector<torch::Tensor> grads;
  for (const auto &s : shapes)
    grads.push_back(torch::randn(s));
  return grads;
}

void set_counters(benchmark::State &state, const std::vector<torch::Tensor> &grads,
                  double collectives) {
  double bytes = 0;
  for (const auto &g : grads)
    bytes += static_cast<double>(g.numel() * g.element_size());
  state.counters["bytes_per_step"] = bytes;
  state.counters["collectives_per_step"] = collectives;
  state.counters["ranks"] = group()->getSize();
}

/// Lines the ranks up before timing starts.
void barrier() {
  std::vector<torch::Tensor> one{torch::zeros({1})};
  group()->allreduce(one)->wait();
}

void BM_HandWrittenLoop(benchmark::State &state) {
  auto grads = model_grads(static_cast<int>(state.range(0)));
  auto &pg = group();
  const int world = pg->getSize();
  barrier();
  for (auto _ : state) {
    for (auto &g : grads) {
      std::vector<torch::Tensor> bufs{g};
      pg->allreduce(bufs)->wait();
      g.div_(world);
    }
  }
  set_counters(state, grads, static_cast<double>(grads.size()));
}

void BM_AllReduceGrads(benchmark::State &state) {
  auto grads = model_grads(static_cast<int>(state.range(0)));
  auto &pg = group();
  barrier();
  for (auto _ : state)
    amp::all_reduce_grads(grads, pg);
  set_counters(state, grads, 1); // both lists fit one 25 MB bucket
}

// Fixed iteration counts: every rank must run the same number of collectives.
BENCHMARK(BM_HandWrittenLoop)->Arg(0)->Arg(1)->Iterations(40)->Repetitions(3)->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AllReduceGrads)->Arg(0)->Arg(1)->Iterations(40)->Repetitions(3)->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

/// Ranks other than 0 run the same benchmarks silently.
class Silent : public benchmark::BenchmarkReporter {
public:
  bool ReportContext(const Context &) override { return true; }
  void ReportRuns(const std::vector<Run> &) override {}
};

} // namespace

int main(int argc, char **argv) {
  benchmark::Initialize(&argc, argv);
  if (e2e::rank_from_env() == 0) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    Silent silent;
    benchmark::RunSpecifiedBenchmarks(&silent);
  }
  benchmark::Shutdown();
}
