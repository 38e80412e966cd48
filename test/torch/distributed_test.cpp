// Multi-rank tests of the collectives in <amp/torch.h> over Gloo: every process is one rank,
// started by run_ranks.py (ctest torch.Distributed.<n>ranks). Each test builds its own group.
#include <amp/torch.h>
#include <torch/torch.h>

#include "gloo_group.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

namespace {

using torch::Tensor;

c10::intrusive_ptr<c10d::ProcessGroupGloo> group_for(const std::string &test) {
  return e2e::gloo_group_from_env(test);
}

int rank() { return e2e::rank_from_env(); }
int world() { return e2e::world_size_from_env(); }

/// Grads of several shapes, equal on every rank up to the factor (rank + 1); one non-contiguous.
std::vector<Tensor> rank_grads() {
  torch::manual_seed(7);
  const double f = rank() + 1;
  return {torch::randn({3, 5}) * f, torch::randn({7}) * f, torch::randn({4, 6}).t() * f,
          torch::randn({2, 2, 2}) * f, torch::randn({300}) * f};
}

/// The mean over ranks of rank_grads(): the base grads times (1 + ... + world) / world.
std::vector<Tensor> expected_mean() {
  torch::manual_seed(7);
  const double f = (world() + 1) / 2.0;
  return {torch::randn({3, 5}) * f, torch::randn({7}) * f, torch::randn({4, 6}).t() * f,
          torch::randn({2, 2, 2}) * f, torch::randn({300}) * f};
}

TEST(Distributed, AllReduceGradsAveragesInBuckets) {
  auto pg = group_for("average");
  // 64-byte buckets: several grads share none, the 300-element one is a bucket on its own.
  for (std::size_t bucket_bytes : {std::size_t{64}, std::size_t{256}, amp::kDefaultBucketBytes}) {
    auto grads = rank_grads();
    const Tensor noncontiguous = grads[2];
    amp::all_reduce_grads(grads, pg, /*average=*/true, bucket_bytes);
    auto want = expected_mean();
    for (std::size_t i = 0; i < grads.size(); ++i)
      EXPECT_TRUE(torch::allclose(grads[i], want[i], 1e-5, 1e-6))
          << "grad " << i << " bucket_bytes " << bucket_bytes;
    EXPECT_TRUE(grads[2].is_same(noncontiguous)); // reduced in place, strides kept
    EXPECT_FALSE(grads[2].is_contiguous());
  }
}

TEST(Distributed, AllReduceGradsSumsWithoutAverage) {
  auto pg = group_for("sum");
  auto grads = rank_grads();
  amp::all_reduce_grads(grads, pg, /*average=*/false);
  auto want = expected_mean();
  for (std::size_t i = 0; i < grads.size(); ++i)
    EXPECT_TRUE(torch::allclose(grads[i], want[i] * world(), 1e-5, 1e-5)) << "grad " << i;
}

TEST(Distributed, AllReduceGradsEqualsAPerParameterLoop) {
  auto pg = group_for("loop");
  auto grads = rank_grads();
  auto looped = rank_grads();
  amp::all_reduce_grads(grads, pg);
  for (auto &g : looped) {
    std::vector<Tensor> one{g.contiguous()};
    pg->allreduce(one)->wait();
    g.copy_(one[0] / world());
  }
  for (std::size_t i = 0; i < grads.size(); ++i)
    EXPECT_TRUE(torch::allclose(grads[i], looped[i], 1e-6, 1e-7)) << "grad " << i;
}

TEST(Distributed, CollectiveErrorNamesOpAndRank) {
  auto pg = group_for("error");
  std::vector<Tensor> grads{torch::ones({4}, torch::kBool)}; // Gloo has no bool all-reduce
  try {
    amp::all_reduce_grads(grads, pg);
    FAIL() << "expected amp::Error";
  } catch (const amp::Error &e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("amp::all_reduce_grads (bucket 1 of 1)"), std::string::npos) << what;
    EXPECT_NE(what.find("allreduce failed on rank " + std::to_string(rank()) + " of " +
                        std::to_string(world())),
              std::string::npos)
        << what;
  }
  std::vector<Tensor> undefined{Tensor()};
  EXPECT_THROW(amp::all_reduce_grads(undefined, pg), amp::Error);
  EXPECT_THROW(amp::all_reduce_grads(grads, c10::intrusive_ptr<c10d::ProcessGroup>()), amp::Error);
  EXPECT_THROW(amp::GradScalerOptions().process_group(amp::ProcessGroupRef()), amp::Error);
}

/// One step of a scaler on per-rank grads (not reduced: as with sharded grads) where only the
/// last rank's grads hold an inf. Returns whether this rank's parameter changed.
bool steps_with_inf_on_last_rank(amp::GradScalerOptions options, double *scale_after) {
  torch::manual_seed(3);
  auto w = torch::randn({4}, torch::requires_grad());
  torch::optim::SGD opt({w}, torch::optim::SGDOptions(0.1));
  amp::GradScaler scaler(options.init_scale(1024.0));
  const Tensor before = w.detach().clone();
  (void)scaler.scale((w * w).sum()); // creates the scale
  auto grads = std::vector<Tensor>{torch::ones({4}) * 1024.0 * (rank() + 1)};
  if (rank() == world() - 1)
    grads[0][1] = std::numeric_limits<float>::infinity();
  scaler.unscale_(opt, grads);
  scaler.step(opt, grads);
  scaler.update();
  *scale_after = scaler.get_scale();
  return !torch::equal(w.detach(), before);
}

TEST(Distributed, InfOnOneRankMakesEveryRankSkip) {
  auto pg = group_for("inf");
  double scale = 0;
  EXPECT_FALSE(steps_with_inf_on_last_rank(amp::GradScalerOptions().process_group(pg), &scale))
      << "rank " << rank() << " stepped although rank " << world() - 1 << " found an inf";
  EXPECT_EQ(scale, 512.0);
  // Without the group only the rank with the inf skips: the ranks' parameters diverge.
  const bool stepped = steps_with_inf_on_last_rank(amp::GradScalerOptions(), &scale);
  EXPECT_EQ(stepped, rank() != world() - 1);
  EXPECT_EQ(scale, rank() == world() - 1 ? 512.0 : 1024.0);
}

TEST(Distributed, StepWithoutUnscaleReducesTheInfCheckToo) {
  auto pg = group_for("step_only");
  torch::manual_seed(3);
  auto w = torch::randn({4}, torch::requires_grad());
  torch::optim::SGD opt({w}, torch::optim::SGDOptions(0.1));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(8.0).process_group(pg));
  const Tensor before = w.detach().clone();
  (void)scaler.scale(w.sum());
  std::vector<Tensor> grads{torch::ones({4})};
  if (rank() == 0)
    grads[0][0] = std::numeric_limits<float>::quiet_NaN();
  scaler.step(opt, grads);
  scaler.update();
  EXPECT_TRUE(torch::equal(w.detach(), before)) << "rank " << rank();
  EXPECT_EQ(scaler.get_scale(), 4.0);
}

/// The full vector is the same on every rank; each rank holds its chunk (a shard).
TEST(Distributed, GlobalNormAndClipOfShardedGrads) {
  auto pg = group_for("norm");
  torch::manual_seed(11);
  auto full = torch::randn({40}) * 3;
  auto shard = full.chunk(world())[rank()];
  std::vector<Tensor> grads{shard.narrow(0, 0, shard.numel() / 2),
                            shard.narrow(0, shard.numel() / 2, shard.numel() - shard.numel() / 2)};
  auto norm = amp::global_norm(grads, pg);
  EXPECT_NEAR(norm.item<double>(), full.norm().item<double>(), 1e-4);
  EXPECT_LT(amp::global_norm(grads).item<double>(), norm.item<double>());

  auto clipped = amp::clip_by_global_norm(grads, 1.0, pg);
  auto want = amp::clip_by_global_norm({full}, 1.0)[0].chunk(world())[rank()];
  EXPECT_TRUE(torch::allclose(torch::cat(clipped), want, 1e-5, 1e-6));
  EXPECT_NEAR(amp::global_norm(clipped, pg).item<double>(), 1.0, 1e-4);
  EXPECT_THROW(amp::clip_by_global_norm(grads, 0.0, pg), amp::Error);
}

} // namespace
