// Collectives over the caller's c10d process group: bucketed all-reduce of explicit grads, the
// sharded global norm, and the GradScaler's inf check reduced with MAX (docs/distributed.md).
#include <amp/torch.h>

#include "clip_outputs.h"
#include "distributed.h"

#include <fmt/format.h>

#include <exception>
#include <string>
#include <utility>

namespace amp {

namespace detail {
struct Collective {
  ProcessGroupRef process_group;
};
} // namespace detail

namespace {

std::string where(const ProcessGroupRef &pg) {
  return fmt::format("rank {} of {}", pg.rank(), pg.size());
}

/// Starts one all-reduce; an exception from the backend becomes amp::Error naming op and rank.
c10::intrusive_ptr<c10d::Work> start_allreduce(const ProcessGroupRef &pg,
                                               std::vector<torch::Tensor> &ts, c10d::ReduceOp op,
                                               const std::string &what) {
  c10d::AllreduceOptions opts;
  opts.reduceOp = op;
  try {
    return pg.allreduce(ts, opts);
  } catch (const std::exception &e) {
    throw Error(fmt::format("{}: allreduce failed on {}: {}", what, where(pg), e.what()));
  }
}

void wait_for(c10d::Work &work, const ProcessGroupRef &pg, const std::string &what) {
  try {
    work.wait();
  } catch (const std::exception &e) {
    throw Error(fmt::format("{}: allreduce failed on {}: {}", what, where(pg), e.what()));
  }
}

void check_group(const ProcessGroupRef &pg, const char *what) {
  if (!pg)
    throw Error(fmt::format("{}: the process group is null", what));
}

/// Consecutive grads of one device and dtype whose bytes fit one bucket (or one larger grad).
struct Bucket {
  std::vector<torch::Tensor> grads;
  std::size_t bytes = 0;
  torch::Tensor flat; // what is reduced: a packed copy, or the grad itself when it stands alone
};

/// Grads in list order into buckets; a bucket is closed when the next grad has another device or
/// dtype or would overflow it. Every rank computes the same buckets from the same shapes.
std::vector<Bucket> pack(const std::vector<torch::Tensor> &grads, std::size_t bucket_bytes) {
  std::vector<Bucket> buckets;
  for (std::size_t i = 0; i < grads.size(); ++i) {
    const torch::Tensor &g = grads[i];
    if (!g.defined())
      throw Error(fmt::format(
          "amp::all_reduce_grads: grad {} is undefined (every rank must reduce the same grads)", i));
    const std::size_t bytes = static_cast<std::size_t>(g.numel()) * g.element_size();
    bool fits = !buckets.empty() && buckets.back().grads.front().device() == g.device() &&
                buckets.back().grads.front().scalar_type() == g.scalar_type() &&
                buckets.back().bytes + bytes <= bucket_bytes;
    if (!fits)
      buckets.emplace_back();
    buckets.back().grads.push_back(g);
    buckets.back().bytes += bytes;
  }
  return buckets;
}

std::string label(std::size_t bucket, std::size_t buckets) {
  return fmt::format("amp::all_reduce_grads (bucket {} of {})", bucket + 1, buckets);
}

} // namespace

ProcessGroupRef::operator bool() const {
#if AMP_TORCH_C10D_BACKEND
  if (backend_)
    return true;
#endif
  return static_cast<bool>(group_);
}

int ProcessGroupRef::rank() const {
#if AMP_TORCH_C10D_BACKEND
  if (backend_)
    return backend_->getRank();
#endif
  return group_->getRank();
}

int ProcessGroupRef::size() const {
#if AMP_TORCH_C10D_BACKEND
  if (backend_)
    return backend_->getSize();
#endif
  return group_->getSize();
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRef::allreduce(std::vector<torch::Tensor> &tensors,
                                                          const c10d::AllreduceOptions &options) const {
#if AMP_TORCH_C10D_BACKEND
  if (backend_)
    return backend_->allreduce(tensors, options);
#endif
  return group_->allreduce(tensors, options);
}

void all_reduce_grads(const std::vector<torch::Tensor> &grads, const ProcessGroupRef &process_group,
                      bool average, std::size_t bucket_bytes) {
  check_group(process_group, "amp::all_reduce_grads");
  if (bucket_bytes == 0)
    throw Error("amp::all_reduce_grads: bucket_bytes must be > 0");
  // The collective writes the grads' memory without moving their version counters: a norm
  // remembered from an unscale_ before this no longer holds.
  detail::forget_unscaled_norm();
  torch::NoGradGuard no_grad;
  auto buckets = pack(grads, bucket_bytes);
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  works.reserve(buckets.size());
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    Bucket &bucket = buckets[b];
    const torch::Tensor &first = bucket.grads.front();
    if (bucket.grads.size() == 1 && first.is_contiguous()) {
      bucket.flat = first; // reduced in place: no copy
    } else {
      std::vector<torch::Tensor> flat_views;
      flat_views.reserve(bucket.grads.size());
      for (const auto &g : bucket.grads)
        flat_views.push_back(g.reshape({-1}));
      bucket.flat = torch::cat(flat_views);
    }
    std::vector<torch::Tensor> io{bucket.flat};
    works.push_back(
        start_allreduce(process_group, io, c10d::ReduceOp::SUM, label(b, buckets.size())));
  }
  const int world = process_group.size();
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    wait_for(*works[b], process_group, label(b, buckets.size()));
    Bucket &bucket = buckets[b];
    if (average && world > 1)
      bucket.flat.div_(world);
    if (bucket.flat.is_same(bucket.grads.front()))
      continue;
    std::int64_t at = 0;
    for (auto &g : bucket.grads) {
      g.copy_(bucket.flat.narrow(0, at, g.numel()).view(g.sizes()));
      at += g.numel();
    }
  }
}

torch::Tensor global_norm(const std::vector<torch::Tensor> &xs, const ProcessGroupRef &process_group) {
  check_group(process_group, "amp::global_norm");
  torch::NoGradGuard no_grad;
  auto local = global_norm(xs);
  std::vector<torch::Tensor> io{local.pow(2).reshape({1})};
  auto work = start_allreduce(process_group, io, c10d::ReduceOp::SUM, "amp::global_norm");
  wait_for(*work, process_group, "amp::global_norm");
  return io.front().reshape({}).sqrt();
}

std::vector<torch::Tensor> clip_by_global_norm(const std::vector<torch::Tensor> &xs,
                                               double clip_norm,
                                               const ProcessGroupRef &process_group) {
  detail::check_clip_arguments(xs, clip_norm, "amp::clip_by_global_norm");
  return detail::clip_to_norm(xs, clip_norm, global_norm(xs, process_group));
}

torch::Tensor clip_by_global_norm_(const std::vector<torch::Tensor> &xs, double clip_norm,
                                   const ProcessGroupRef &process_group) {
  if (detail::clips_nothing(clip_norm)) {
    detail::check_clip_arguments(xs, 1.0, "amp::clip_by_global_norm_");
    return global_norm(xs, process_group);
  }
  detail::check_clip_arguments(xs, clip_norm, "amp::clip_by_global_norm_");
  auto norm = global_norm(xs, process_group);
  detail::clip_to_norm_(xs, clip_norm, norm, "amp::clip_by_global_norm_");
  return norm;
}

GradScalerOptions &GradScalerOptions::process_group(ProcessGroupRef process_group) {
  check_group(process_group, "amp::GradScalerOptions::process_group");
  collective_ = std::make_shared<const detail::Collective>(detail::Collective{std::move(process_group)});
  return *this;
}

void detail::reduce_found_inf(const Collective &collective,
                              std::vector<torch::Tensor> &found_inf_per_device) {
  torch::NoGradGuard no_grad;
  auto combined = found_inf_per_device.front().reshape({1}).clone();
  for (std::size_t i = 1; i < found_inf_per_device.size(); ++i)
    combined += found_inf_per_device[i].to(combined.device()).reshape({1});
  std::vector<torch::Tensor> io{combined};
  const auto &pg = collective.process_group;
  auto work = start_allreduce(pg, io, c10d::ReduceOp::MAX, "amp::GradScaler (found_inf, MAX)");
  wait_for(*work, pg, "amp::GradScaler (found_inf, MAX)");
  found_inf_per_device.assign(1, io.front().reshape({}));
}

} // namespace amp
