// The collectives of <amp/torch.h> on CUDA tensors over a c10d::ProcessGroupNCCL of world size 1
// (one GPU), loaded by nccl_world1.cpp once a GPU is known to be there (this module needs
// libtorch_cuda and NCCL at load time); docs/distributed.md, "NCCL". One FAIL line per failed check.
#include <amp/torch.h>
// Not <torch/torch.h>: with these narrower headers this file compiles in about 3/4 of the time.
#include <torch/cuda.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>
#include <torch/types.h>
#include <torch/utils.h>
#include <torch/version.h>

#include <torch/csrc/cuda/nccl.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include <ATen/cuda/CUDAContext.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using torch::Tensor;

int failures = 0;

void check(bool ok, const std::string &what) {
  if (!ok) {
    std::printf("FAIL: %s\n", what.c_str());
    ++failures;
  }
}

/// What one allreduce issued to the group carried: the collectives' record, to check the buckets
/// and the reduce ops that amp chose (at world size 1 every reduced value equals its input).
struct IssuedAllreduce {
  c10d::ReduceOp::RedOpType op;
  at::ScalarType dtype;
  std::int64_t numel;
  bool cuda;
};

/// ProcessGroupNCCL that records every allreduce before NCCL runs it.
class RecordingNCCL : public c10d::ProcessGroupNCCL {
public:
  using c10d::ProcessGroupNCCL::ProcessGroupNCCL;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor> &tensors,
                                           const c10d::AllreduceOptions &opts) override {
    for (const auto &t : tensors)
      issued.push_back({opts.reduceOp.op_, t.scalar_type(), t.numel(), t.is_cuda()});
    return c10d::ProcessGroupNCCL::allreduce(tensors, opts);
  }
  std::vector<IssuedAllreduce> issued;
};

const torch::Device kGpu(torch::kCUDA, 0);

/// Grads of three dtypes in runs of one dtype, one non-contiguous, on the GPU.
std::vector<Tensor> mixed_grads() {
  torch::manual_seed(7);
  auto on_gpu = [](Tensor t, torch::Dtype dtype) { return t.to(kGpu, dtype); };
  return {on_gpu(torch::randn({3, 5}), torch::kFloat),   on_gpu(torch::randn({7}), torch::kFloat),
          on_gpu(torch::randn({4, 6}), torch::kFloat).t(), on_gpu(torch::randn({9}), torch::kHalf),
          on_gpu(torch::randn({2, 2, 2}), torch::kHalf),   on_gpu(torch::randn({33}), torch::kBFloat16),
          on_gpu(torch::randn({300}), torch::kFloat)};
}

/// The (dtype, numel) of each bucket that docs/distributed.md's rule gives for `grads`: consecutive
/// grads of one dtype while their bytes fit `bucket_bytes` (a larger grad alone).
std::vector<std::pair<at::ScalarType, std::int64_t>> expected_buckets(const std::vector<Tensor> &grads,
                                                                      std::size_t bucket_bytes) {
  std::vector<std::pair<at::ScalarType, std::int64_t>> out;
  std::size_t bytes = 0;
  for (const auto &g : grads) {
    const std::size_t b = static_cast<std::size_t>(g.numel()) * g.element_size();
    if (out.empty() || out.back().first != g.scalar_type() || bytes + b > bucket_bytes) {
      out.emplace_back(g.scalar_type(), 0);
      bytes = 0;
    }
    out.back().second += g.numel();
    bytes += b;
  }
  return out;
}

std::string bucket_list(const std::vector<IssuedAllreduce> &issued) {
  std::string s;
  for (const auto &i : issued)
    s += std::string(s.empty() ? "" : ", ") + c10::toString(i.dtype) + "[" + std::to_string(i.numel) + "]";
  return s;
}

void all_reduce_grads_in_buckets(RecordingNCCL &pg, const c10::intrusive_ptr<RecordingNCCL> &ref) {
  for (bool average : {true, false}) {
    for (std::size_t bucket_bytes : {std::size_t{64}, std::size_t{256}, amp::kDefaultBucketBytes}) {
      const std::string where = std::string("all_reduce_grads(average=") + (average ? "true" : "false") +
                                ", bucket_bytes=" + std::to_string(bucket_bytes) + ")";
      auto grads = mixed_grads();
      std::vector<Tensor> held = grads, before;
      for (const auto &g : grads)
        before.push_back(g.clone());
      pg.issued.clear();
      amp::all_reduce_grads(grads, ref, average, bucket_bytes);
      // World size 1: the sum over ranks, and the mean, are each grad itself, bit for bit.
      for (std::size_t i = 0; i < grads.size(); ++i) {
        check(torch::equal(grads[i], before[i]), where + ": grad " + std::to_string(i) + " changed");
        check(grads[i].is_same(held[i]), where + ": grad " + std::to_string(i) + " is another tensor");
        check(grads[i].is_cuda(), where + ": grad " + std::to_string(i) + " left the GPU");
      }
      check(!grads[2].is_contiguous(), where + ": the transposed grad lost its strides");
      auto want = expected_buckets(grads, bucket_bytes);
      bool same = pg.issued.size() == want.size();
      for (std::size_t b = 0; same && b < want.size(); ++b)
        same = pg.issued[b].dtype == want[b].first && pg.issued[b].numel == want[b].second &&
               pg.issued[b].cuda && pg.issued[b].op == c10d::ReduceOp::SUM;
      check(same, where + ": issued " + std::to_string(pg.issued.size()) + " allreduces (" +
                      bucket_list(pg.issued) + "), expected " + std::to_string(want.size()) +
                      " SUMs on CUDA");
    }
  }
  // The 64-byte buckets must really split the list, else the check above proves little.
  check(expected_buckets(mixed_grads(), 64).size() >= 6, "the 64-byte buckets do not split the grads");
}

/// One scaler step on `w` with the given grad; returns whether w changed.
bool scaler_step(amp::GradScaler &scaler, bool unscale_first, const Tensor &grad, double *scale_after) {
  torch::manual_seed(3);
  auto w = torch::randn({4}).to(kGpu).requires_grad_(true);
  torch::optim::SGD opt({w}, torch::optim::SGDOptions(0.1));
  const Tensor before = w.detach().clone();
  (void)scaler.scale((w * w).sum()); // creates the scale on the GPU
  std::vector<Tensor> grads{grad.clone()};
  if (unscale_first)
    scaler.unscale_(opt, grads);
  scaler.step(opt, grads);
  scaler.update();
  *scale_after = scaler.get_scale();
  return !torch::equal(w.detach(), before);
}

void scaler_reduces_found_inf(RecordingNCCL &pg, const c10::intrusive_ptr<RecordingNCCL> &ref) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto finite = torch::ones({4}, kGpu) * 1024.0;
  auto with_inf = finite.clone();
  with_inf[1] = inf;
  auto with_nan = finite.clone();
  with_nan[0] = nan;
  struct Case {
    const char *name;
    bool unscale_first;
    Tensor grad;
    bool steps;
    double scale;
  };
  for (const Case &c : {Case{"finite, unscale_ then step", true, finite, true, 1024.0},
                        Case{"inf, unscale_ then step", true, with_inf, false, 512.0},
                        Case{"NaN, step alone", false, with_nan, false, 512.0}}) {
    amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024.0).process_group(ref));
    pg.issued.clear();
    double scale = 0;
    const bool stepped = scaler_step(scaler, c.unscale_first, c.grad, &scale);
    const std::string where = std::string("GradScaler with process_group, ") + c.name;
    check(stepped == c.steps, where + (c.steps ? ": the step was skipped" : ": the step was taken"));
    check(scale == c.scale, where + ": scale " + std::to_string(scale) + ", expected " +
                                std::to_string(c.scale));
    const bool one_max = pg.issued.size() == 1 && pg.issued[0].op == c10d::ReduceOp::MAX &&
                         pg.issued[0].numel == 1 && pg.issued[0].dtype == at::kFloat && pg.issued[0].cuda;
    check(one_max, where + ": expected one MAX allreduce of one fp32 element on CUDA, got " +
                       std::to_string(pg.issued.size()) + " (" + bucket_list(pg.issued) + ")");
  }
  // Without the group the same inf skips the step too (one rank), and nothing is reduced.
  amp::GradScaler local(amp::GradScalerOptions().init_scale(1024.0));
  pg.issued.clear();
  double scale = 0;
  check(!scaler_step(local, true, with_inf, &scale) && scale == 512.0,
        "GradScaler without process_group: an inf did not skip the step and back off");
  check(pg.issued.empty(), "GradScaler without process_group issued a collective");
}

void norms_match_the_local_ones(const c10::intrusive_ptr<RecordingNCCL> &ref) {
  torch::manual_seed(11);
  std::vector<Tensor> grads{torch::randn({40}).to(kGpu) * 3, torch::randn({5, 7}).to(kGpu),
                            torch::randn({64}).to(kGpu, torch::kHalf)};
  const double local = amp::global_norm(grads).item<double>();
  const Tensor reduced = amp::global_norm(grads, ref);
  check(reduced.is_cuda() && reduced.scalar_type() == torch::kFloat,
        "global_norm(grads, pg) is not an fp32 tensor on the GPU");
  const double norm = reduced.item<double>();
  check(std::abs(norm - local) <= 1e-5 * local,
        "global_norm(grads, pg) = " + std::to_string(norm) + ", local " + std::to_string(local));
  check(local > 1.0, "the grads' norm does not exceed the clip norm: clipping is not exercised");

  // The reduced norm is sqrt(norm^2), which may differ from the local one in its last bit: an
  // fp16 output may then round one ulp apart.
  auto close = [](const Tensor &a, const Tensor &b) {
    const double rtol = a.scalar_type() == torch::kHalf ? 2e-3 : 1e-5;
    return torch::allclose(a.to(torch::kFloat), b.to(torch::kFloat), rtol, 1e-6);
  };
  auto clipped = amp::clip_by_global_norm(grads, 1.0, ref);
  auto want = amp::clip_by_global_norm(grads, 1.0);
  for (std::size_t i = 0; i < grads.size(); ++i)
    check(close(clipped[i], want[i]),
          "clip_by_global_norm(grads, 1, pg)[" + std::to_string(i) + "] differs from the local one");
  check(std::abs(amp::global_norm(clipped).item<double>() - 1.0) < 1e-3,
        "clip_by_global_norm(grads, 1, pg) has norm " +
            std::to_string(amp::global_norm(clipped).item<double>()));

  std::vector<Tensor> in_place;
  for (const auto &g : grads)
    in_place.push_back(g.clone());
  const double before = amp::clip_by_global_norm_(in_place, 1.0, ref).item<double>();
  check(std::abs(before - local) <= 1e-5 * local, "clip_by_global_norm_(grads, 1, pg) returned norm " +
                                                      std::to_string(before));
  for (std::size_t i = 0; i < grads.size(); ++i)
    check(close(in_place[i], want[i]),
          "clip_by_global_norm_(grads, 1, pg)[" + std::to_string(i) + "] differs from the local clip");
}

struct Mlp : torch::nn::Module {
  Mlp() {
    fc1 = register_module("fc1", torch::nn::Linear(32, 64));
    fc2 = register_module("fc2", torch::nn::Linear(64, 10));
  }
  Tensor forward(const Tensor &x) { return torch::log_softmax(fc2->forward(torch::relu(fc1->forward(x))), 1); }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};

struct Trained {
  std::vector<double> losses;
  std::vector<double> scales;
  std::vector<Tensor> params;
};

/// A few steps of O2 fp16 training on the GPU, through value_and_grad; with `pg` the grads are
/// all-reduced, the scaler reduces its inf check and the clip its norm over it. Step 2's grads get
/// an inf, so that both runs skip it and back off.
Trained train(const c10::intrusive_ptr<RecordingNCCL> &pg) {
  torch::manual_seed(0);
  auto model = std::make_shared<Mlp>();
  model->to(kGpu);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  amp::GradScalerOptions options;
  options.init_scale(256.0);
  if (pg)
    options.process_group(pg);
  amp::GradScaler scaler(options);
  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kHalf);
  // Drawn on the CPU (then copied): the runs must see the same data whatever the CUDA generator's state.
  auto x = torch::randn({64, 32}).to(kGpu);
  auto y = torch::randint(0, 10, {64}, torch::kLong).to(kGpu);
  Trained out;
  for (int s = 0; s < 6; ++s) {
    Tensor loss;
    auto grad_fn = amp::value_and_grad([&] {
      loss = torch::nll_loss(amp::cast_to_adapter_tensor(amp_model->forward(x)), y);
      return scaler.scale(loss);
    }, amp::parameters_of(optimizer));
    auto [scaled_loss, grads] = grad_fn();
    if (s == 2)
      grads[0].view({-1})[0] = std::numeric_limits<float>::infinity();
    if (pg)
      amp::all_reduce_grads(grads, pg, /*average=*/true, /*bucket_bytes=*/4096);
    scaler.unscale_(optimizer, grads);
    if (pg)
      amp::clip_by_global_norm_(grads, 0.5, pg);
    else
      amp::clip_by_global_norm_(grads, 0.5);
    scaler.step(optimizer, grads);
    scaler.update();
    out.losses.push_back(loss.item<double>());
    out.scales.push_back(scaler.get_scale());
  }
  for (const auto &p : model->parameters())
    out.params.push_back(p.detach().clone());
  return out;
}

void training_with_and_without_the_group(RecordingNCCL &pg, const c10::intrusive_ptr<RecordingNCCL> &ref) {
  pg.issued.clear();
  const Trained with = train(ref);
  const std::size_t issued = pg.issued.size();
  const Trained without = train(c10::intrusive_ptr<RecordingNCCL>());
  // Per step: fc1.weight (8 KiB) alone and the other three grads in one 4 KiB bucket, the scaler's
  // found_inf, the clip's norm.
  check(issued == 6 * 4, "training with the group issued " + std::to_string(issued) +
                             " allreduces, expected 6 steps x 4");
  for (std::size_t s = 0; s < with.losses.size(); ++s) {
    check(std::abs(with.losses[s] - without.losses[s]) <= 1e-4 * std::abs(without.losses[s]),
          "training step " + std::to_string(s) + ": loss " + std::to_string(with.losses[s]) +
              " with NCCL, " + std::to_string(without.losses[s]) + " without");
    check(with.scales[s] == without.scales[s], "training step " + std::to_string(s) + ": scale " +
                                                   std::to_string(with.scales[s]) + " with NCCL, " +
                                                   std::to_string(without.scales[s]) + " without");
  }
  check(with.scales[2] == 128.0, "the inf at step 2 did not back the scale off to 128 (got " +
                                     std::to_string(with.scales[2]) + ")");
  check(with.losses.back() < with.losses.front(), "the loss did not fall over 6 steps");
  for (std::size_t i = 0; i < with.params.size(); ++i)
    check(torch::allclose(with.params[i], without.params[i], 1e-4, 1e-5),
          "parameter " + std::to_string(i) + " differs after training with and without NCCL");
}

void collective_errors_name_op_and_rank(const c10::intrusive_ptr<RecordingNCCL> &ref) {
  // NCCL reduces only CUDA tensors: ProcessGroupNCCL::allreduce throws at issue.
  std::vector<Tensor> on_cpu{torch::ones({4})};
  try {
    amp::all_reduce_grads(on_cpu, ref);
    check(false, "all_reduce_grads of a CPU tensor over NCCL did not throw");
  } catch (const amp::Error &e) {
    const std::string what = e.what();
    check(what.find("amp::all_reduce_grads (bucket 1 of 1): allreduce failed on rank 0 of 1") !=
              std::string::npos,
          "the error does not name op, bucket and rank: " + what);
  } catch (const std::exception &e) {
    check(false, std::string("all_reduce_grads threw something other than amp::Error: ") + e.what());
  }
  std::vector<Tensor> undefined{Tensor()};
  bool threw = false;
  try {
    amp::all_reduce_grads(undefined, ref);
  } catch (const amp::Error &) {
    threw = true;
  }
  check(threw, "all_reduce_grads of an undefined grad did not throw amp::Error");
}

/// A temporary directory for the FileStore, removed at exit.
struct StoreDir {
  std::filesystem::path path;
  StoreDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "amp-nccl-XXXXXX").string();
    if (!mkdtemp(pattern.data()))
      throw std::runtime_error("mkdtemp failed for " + pattern);
    path = pattern;
  }
  ~StoreDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

} // namespace

/// 0 when every check passed, else 1.
extern "C" int amp_nccl_world1_run() {
  if (!torch::cuda::is_available()) {
    // The launcher's driver saw a GPU: a libtorch that does not is a broken setup, not a skip.
    std::printf("FAIL: the CUDA driver reports a GPU but libtorch does not (a CPU-only libtorch?)\n");
    return 1;
  }
  std::printf("nccl_world1: libtorch %s, NCCL headers %d.%d.%d, NCCL library %llu, %s\n", TORCH_VERSION,
              NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH,
              static_cast<unsigned long long>(torch::cuda::nccl::version()),
              at::cuda::getDeviceProperties(0)->name);
  try {
    StoreDir dir;
    auto store = c10::make_intrusive<c10d::FileStore>((dir.path / "store").string(), 1);
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = std::chrono::seconds(60);
    auto pg = c10::make_intrusive<RecordingNCCL>(store, /*rank=*/0, /*size=*/1, options);
    struct Section {
      const char *name;
      std::function<void()> run;
    };
    const Section sections[] = {
        {"all_reduce_grads: buckets, dtypes, average and sum", [&] { all_reduce_grads_in_buckets(*pg, pg); }},
        {"GradScaler process_group: found_inf reduced with MAX", [&] { scaler_reduces_found_inf(*pg, pg); }},
        {"global_norm / clip_by_global_norm with pg", [&] { norms_match_the_local_ones(pg); }},
        {"training through value_and_grad, NCCL vs none", [&] { training_with_and_without_the_group(*pg, pg); }},
        {"collective errors name op and rank", [&] { collective_errors_name_op_and_rank(pg); }},
    };
    for (const auto &section : sections) {
      const int before = failures;
      try {
        section.run();
        torch::cuda::synchronize();
      } catch (const std::exception &e) {
        check(false, std::string(section.name) + ": threw: " + e.what());
      }
      std::printf("%s: %s\n", failures == before ? "PASS" : "FAIL", section.name);
    }
#if TORCH_VERSION_MAJOR >= 2
    pg->shutdown(); // 2.x warns at exit about a group destroyed without shutdown
#endif
  } catch (const std::exception &e) {
    check(false, std::string("creating the NCCL group: ") + e.what());
  }
  std::printf("nccl_world1: %s (%d failed checks)\n", failures == 0 ? "PASS" : "FAIL", failures);
  return failures == 0 ? 0 : 1;
}
