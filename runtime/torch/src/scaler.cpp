// GradScaler with explicit gradients, global_norm and clip_by_global_norm for libtorch; the list
// math runs in the runtime core (core_dispatch.h).
#include <amp/torch.h>

#include "clip_outputs.h"
#include "core_dispatch.h"
#include "distributed.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <optional>
#include <tuple>

namespace amp {
namespace {

/// Tensors grouped by device, keeping each tensor's position in the original list.
struct DeviceGroup {
  torch::Device device;
  std::vector<torch::Tensor> tensors;
  std::vector<std::size_t> index;
};

std::vector<DeviceGroup> by_device(const std::vector<torch::Tensor> &ts) {
  std::vector<DeviceGroup> groups;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    if (!ts[i].defined())
      continue;
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const DeviceGroup &g) { return g.device == ts[i].device(); });
    if (it == groups.end()) {
      groups.push_back({ts[i].device(), {}, {}});
      it = std::prev(groups.end());
    }
    it->tensors.push_back(ts[i]);
    it->index.push_back(i);
  }
  return groups;
}

/// Whether the inf checks recorded for one optimizer found an inf or NaN: the one host read.
bool found_inf(const std::vector<torch::Tensor> &found_inf_per_device) {
  if (found_inf_per_device.size() == 1)
    return found_inf_per_device.front().item<float>() != 0.0f;
  torch::Tensor found = torch::zeros({}, found_inf_per_device.front().options());
  for (const auto &f : found_inf_per_device)
    found += f.to(found.device());
  return found.item<float>() != 0.0f;
}

/// What unscale_ records: the memory of each grad, in order, and the event it happened at; with
/// the norm of the unscale's pass, also each grad's version counter now (see unscaled_norm_for).
std::shared_ptr<const detail::UnscaledGrads> record_unscaled(const std::vector<torch::Tensor> &grads,
                                                             const torch::Tensor &norm) {
  auto record = std::make_shared<detail::UnscaledGrads>();
  record->grads.reserve(grads.size());
  for (const auto &g : grads)
    record->grads.emplace_back(g);
  record->event = detail::next_event();
  if (norm.defined()) {
    record->versions.reserve(grads.size());
    for (const auto &g : grads) {
      if (g.defined() && g.is_inference())
        return record; // no version counter: the clip computes its own norm
      record->versions.push_back(g.defined() ? g._version() : 0);
    }
    record->norm = norm;
  }
  return record;
}

/// step() after unscale_(): each grad is one that unscale_ unscaled or a clip of it made after
/// the unscale. Anything else (another list's grads, a copy made before the unscale) may still be
/// scaled: applying it would move the parameters by up to the loss scale times the update.
void check_unscaled(const detail::UnscaledGrads &record, const std::vector<torch::Tensor> &grads) {
  if (grads.size() != record.grads.size())
    throw Error(fmt::format("amp::GradScaler::step: {} grads, but unscale_() unscaled {} for this "
                            "optimizer: pass step() the grads that unscale_() unscaled",
                            grads.size(), record.grads.size()));
  for (std::size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].defined())
      continue; // no grad: the parameter is not updated
    if (!detail::derives_from(grads[i], record.grads[i], record.event))
      throw Error(fmt::format(
          "amp::GradScaler::step: grad {} is not the grad unscale_() unscaled for this optimizer "
          "(nor amp::clip_by_global_norm of it, computed after the unscale), so it may still be "
          "scaled by the loss scale; pass step() the unscaled grads (changed in place or clipped), "
          "or leave out unscale_() and let step() unscale the grads it is given",
          i));
  }
}

/// The scale and the factors are fp32 on the device: a double that is finite but rounds to 0 or
/// inf in fp32 (1e-50, 1e300) is as wrong as 0 or inf.
bool positive_finite_f32(double v) {
  return v > 0 && v <= std::numeric_limits<float>::max() && static_cast<float>(v) > 0.0f;
}

/// A loss scale must be a positive finite number: 0 zeroes every grad, inf or NaN poisons them.
void check_scale_value(const char *where, double scale) {
  if (!positive_finite_f32(scale))
    throw Error(fmt::format("{}: the scale must be finite and > 0, got {:g}", where, scale));
}

void validate(const GradScalerOptions &o) {
  if (!positive_finite_f32(o.init_scale()))
    throw Error(fmt::format("amp::GradScaler: init_scale must be finite and > 0, got {:g}",
                            o.init_scale()));
  if (!(o.growth_factor() > 1) || !positive_finite_f32(o.growth_factor()))
    throw Error(fmt::format("amp::GradScaler: growth_factor must be finite and > 1, got {:g}",
                            o.growth_factor()));
  if (!(o.backoff_factor() < 1) || !positive_finite_f32(o.backoff_factor()))
    throw Error(fmt::format("amp::GradScaler: backoff_factor must be in (0, 1), got {:g}",
                            o.backoff_factor()));
  if (o.growth_interval() < 1 || o.growth_interval() > INT32_MAX)
    throw Error(fmt::format("amp::GradScaler: growth_interval must be in [1, 2^31), got {}",
                            o.growth_interval()));
}

/// The optimizer's parameters that `grads` pair up with: all groups, or the first group
/// (what Optimizer::parameters() returns).
std::vector<torch::Tensor *> paired_params(torch::optim::Optimizer &opt, std::size_t n_grads,
                                          const char *who) {
  std::vector<torch::Tensor *> all;
  for (auto &group : opt.param_groups())
    for (auto &p : group.params())
      all.push_back(&p);
  if (n_grads == all.size())
    return all;
  if (!opt.param_groups().empty() && n_grads == opt.param_groups().front().params().size()) {
    all.resize(n_grads);
    return all;
  }
  throw Error(fmt::format(
      "{}: {} grads do not pair up with the optimizer's {} parameters", who, n_grads, all.size()));
}

/// Runs the optimizer on `grads` through the parameters' `.grad`, then puts the old `.grad` back.
/// `who` names the caller in errors.
void step_with(torch::optim::Optimizer &opt, const std::vector<torch::Tensor> &grads,
               const char *who = "amp::GradScaler::step") {
  // No grads at all (every micro-batch of an accumulation window skipped, so nothing was
  // accumulated): the optimizer steps with every .grad unset, which moves no parameter, as the
  // original's step after zero_grad() and no backward.
  if (grads.empty()) {
    std::size_t n = 0;
    for (auto &group : opt.param_groups())
      n += group.params().size();
    if (n > 0) {
      step_with(opt, std::vector<torch::Tensor>(n), who);
      return;
    }
  }
  auto params = paired_params(opt, grads.size(), who);
  std::vector<torch::Tensor> saved;
  saved.reserve(params.size());
  {
    torch::NoGradGuard no_grad;
    for (std::size_t i = 0; i < params.size(); ++i) {
      const torch::Tensor &g = grads[i];
      // A grad of another shape would broadcast in the optimizer's arithmetic.
      if (g.defined() && g.sizes() != params[i]->sizes())
        throw Error(fmt::format("{}: grad {} has shape {} but its parameter has shape {}", who, i,
                                c10::str(g.sizes()), c10::str(params[i]->sizes())));
    }
    for (std::size_t i = 0; i < params.size(); ++i) {
      torch::Tensor &p = *params[i];
      saved.push_back(p.grad());
      const torch::Tensor &g = grads[i];
      if (!p.requires_grad())
        // A frozen parameter: value_and_grad gives it zeros, where backward() gave it no .grad
        // and the optimizer skipped it (weight decay and momentum included).
        p.mutable_grad() = torch::Tensor();
      else if (g.defined() && (g.scalar_type() != p.scalar_type() || g.device() != p.device()))
        p.mutable_grad() = g.to(p.options());
      else
        p.mutable_grad() = g;
    }
  }
  auto put_back = [&] {
    for (std::size_t i = 0; i < params.size(); ++i)
      params[i]->mutable_grad() = saved[i];
  };
  try {
    opt.step();
  } catch (...) {
    put_back();
    throw;
  }
  put_back();
}

} // namespace

// ---- norms and clipping ---------------------------------------------------------------------
torch::Tensor global_norm(const std::vector<torch::Tensor> &xs) {
  if (auto norm = detail::unscaled_norm_for(xs); norm.defined())
    return norm.clone(); // the caller may change it; the memo stays as it was
  auto groups = by_device(xs);
  if (groups.empty())
    return torch::zeros({}, torch::kFloat);
  if (groups.size() == 1)
    return detail::global_norm(groups[0].tensors, groups[0].device);
  const auto home = groups[0].device;
  auto sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat).device(home));
  for (const auto &g : groups)
    sum += detail::global_norm(g.tensors, g.device).to(home).pow(2);
  return sum.sqrt();
}

bool all_finite(const std::vector<torch::Tensor> &xs) {
  torch::NoGradGuard no_grad;
  torch::Tensor bad; // count of non-finite elements, on the first tensor's device
  for (const auto &g : by_device(xs))
    for (const auto &t : g.tensors) {
      if (!t.is_floating_point() && !t.is_complex())
        continue; // integers are always finite
      auto n = torch::isfinite(t).logical_not().sum();
      bad = bad.defined() ? bad + n.to(bad.device()) : n;
    }
  return !bad.defined() || bad.item<std::int64_t>() == 0;
}

std::vector<torch::Tensor> clip_by_global_norm(const std::vector<torch::Tensor> &xs,
                                               double clip_norm) {
  detail::check_clip_arguments(xs, clip_norm, "amp::clip_by_global_norm");
  return detail::clip_to_norm(xs, clip_norm, global_norm(xs));
}

torch::Tensor clip_by_global_norm_(const std::vector<torch::Tensor> &xs, double clip_norm) {
  if (detail::clips_nothing(clip_norm)) {
    detail::check_clip_arguments(xs, 1.0, "amp::clip_by_global_norm_");
    return global_norm(xs);
  }
  detail::check_clip_arguments(xs, clip_norm, "amp::clip_by_global_norm_");
  auto norm = global_norm(xs);
  detail::clip_to_norm_(xs, clip_norm, norm, "amp::clip_by_global_norm_");
  return norm;
}

void clip_by_value_(const std::vector<torch::Tensor> &xs, double clip_value) {
  torch::NoGradGuard no_grad;
  for (const auto &x : xs)
    if (x.defined())
      x.clamp_(-clip_value, clip_value); // moves the version counter: a remembered norm is dropped
}

namespace {
/// The bytes a tensor's elements span in its storage: [begin, end).
std::pair<std::uintptr_t, std::uintptr_t> byte_span(const torch::Tensor &t) {
  auto begin = reinterpret_cast<std::uintptr_t>(t.data_ptr());
  std::int64_t last = 0;
  for (std::int64_t d = 0; d < t.dim(); ++d)
    last += (t.size(d) - 1) * t.stride(d);
  return {begin, begin + static_cast<std::uintptr_t>((last + 1) * t.element_size())};
}

/// Where an in-place op over the list would write some memory more than once: {i, i} for a
/// tensor whose elements overlap (an expanded view), {i, j} (i < j) for two tensors sharing bytes
/// of one storage. Disjoint parts of one storage (a flat gradient buffer) are distinct memory.
std::optional<std::pair<std::size_t, std::size_t>>
shared_memory(const std::vector<torch::Tensor> &xs) {
  struct Span {
    const void *storage;
    std::uintptr_t begin, end;
    std::size_t index;
  };
  std::vector<Span> spans;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const auto &t = xs[i];
    if (!t.defined() || t.numel() == 0)
      continue;
    if (at::has_internal_overlap(t) == at::MemOverlap::Yes)
      return std::pair{i, i};
    auto [begin, end] = byte_span(t);
    spans.push_back({t.storage().unsafeGetStorageImpl(), begin, end, i});
  }
  std::sort(spans.begin(), spans.end(), [](const Span &a, const Span &b) {
    return std::tie(a.storage, a.begin) < std::tie(b.storage, b.begin);
  });
  for (std::size_t k = 1; k < spans.size(); ++k)
    if (spans[k].storage == spans[k - 1].storage && spans[k].begin < spans[k - 1].end)
      return std::pair{std::min(spans[k - 1].index, spans[k].index),
                       std::max(spans[k - 1].index, spans[k].index)};
  return std::nullopt;
}

/// Throws when clipping the list in place would scale some memory more than once.
void check_distinct_memory(const std::vector<torch::Tensor> &xs, const char *who) {
  const auto shared = shared_memory(xs);
  if (!shared)
    return;
  if (shared->first == shared->second)
    throw Error(fmt::format("{}: tensor {} has elements that share memory (an expanded view); "
                            "clipping it in place would scale them more than once",
                            who, shared->first));
  throw Error(fmt::format("{}: tensors {} and {} share memory; clipping in place would "
                          "scale it twice (amp::clip_by_global_norm clips out of place)",
                          who, shared->first, shared->second));
}

/// What unscale_ and step's own unscale take: grads that pair up with the optimizer's parameters
/// (or none: an accumulation window that accumulated nothing), each memory of its own: a grad
/// listed twice, or two sharing bytes, would be divided by the scale twice. Aliased grads have no
/// legitimate use here: value_and_grad gives every parameter a grad of its own, as `.grad` is
/// (the same parameter listed twice gets two copies). Checked before anything is unscaled.
void check_unscalable(torch::optim::Optimizer &opt, const std::vector<torch::Tensor> &grads,
                      const char *who) {
  if (!grads.empty())
    (void)paired_params(opt, grads.size(), who);
  const auto shared = shared_memory(grads);
  if (!shared)
    return;
  if (shared->first == shared->second)
    throw Error(fmt::format("{}: grad {} has elements that share memory (an expanded view); "
                            "unscaling it in place would divide them by the scale more than once",
                            who, shared->first));
  throw Error(fmt::format("{}: grads {} and {} share memory; unscaling in place would divide it by "
                          "the scale twice (pass each grad once, in memory of its own)",
                          who, shared->first, shared->second));
}
} // namespace

bool detail::clips_nothing(double clip_norm) {
  // libtorch's clip_grad_norm_ scales by min(1, max_norm / (norm + 1e-6)): 1 for a max norm past
  // fp32's range (+inf: the norm logged without clipping), whatever the grads' norm in fp32.
  return clip_norm > static_cast<double>(std::numeric_limits<float>::max());
}

void detail::check_clip_arguments(const std::vector<torch::Tensor> &xs, double clip_norm,
                                  const char *who) {
  // The clip runs in fp32: 1e300 and 1e-50 are inf and 0 there.
  if (!positive_finite_f32(clip_norm))
    throw Error(fmt::format("{}: clip_norm must be > 0 and finite in fp32, got {:g}", who,
                            clip_norm));
  // The clipped values are written back in the grads' dtype: an integer grad would be truncated.
  for (std::size_t i = 0; i < xs.size(); ++i)
    if (xs[i].defined() && !xs[i].is_floating_point())
      throw Error(fmt::format("{}: tensor {} has dtype {}; gradients must be floating point", who,
                              i, c10::toString(xs[i].scalar_type())));
}

void detail::clip_to_norm_(const std::vector<torch::Tensor> &xs, double clip_norm,
                           const torch::Tensor &norm, const char *who) {
  check_distinct_memory(xs, who);
  detail::forget_unscaled_norm(); // the writes below do not move the version counters
  torch::NoGradGuard no_grad;
  for (const auto &g : by_device(xs)) {
    std::vector<torch::Tensor> direct, staged, staged_from;
    for (const auto &t : g.tensors) {
      if (t.is_contiguous()) {
        direct.push_back(t);
      } else {
        staged.push_back(t.contiguous()); // clip a copy, write it back
        staged_from.push_back(t);
      }
    }
    auto n = norm.to(g.device);
    detail::clip_by_global_norm(direct, direct, clip_norm, n);
    detail::clip_by_global_norm(staged, staged, clip_norm, n);
    for (std::size_t k = 0; k < staged.size(); ++k)
      staged_from[k].copy_(staged[k]);
  }
}

std::vector<torch::Tensor> detail::clip_to_norm(const std::vector<torch::Tensor> &xs,
                                                double clip_norm, const torch::Tensor &norm) {
  std::vector<torch::Tensor> out(xs.size());
  for (const auto &g : by_device(xs)) {
    std::vector<torch::Tensor> outs;
    outs.reserve(g.tensors.size());
    for (const auto &t : g.tensors)
      outs.push_back(torch::empty(t.sizes(), t.options().memory_format(
                                                  torch::MemoryFormat::Contiguous)));
    std::vector<torch::Tensor> ins;
    ins.reserve(g.tensors.size());
    for (const auto &t : g.tensors)
      ins.push_back(t.is_contiguous() ? t : t.contiguous());
    detail::clip_by_global_norm(ins, outs, clip_norm, norm.to(g.device));
    for (std::size_t k = 0; k < g.index.size(); ++k) {
      detail::record_clip_output(outs[k], g.tensors[k]); // what GradScaler::step accepts
      out[g.index[k]] = outs[k];
    }
  }
  detail::end_clip_call();
  return out;
}

// ---- GradScaler -----------------------------------------------------------------------------
GradScaler::GradScaler(GradScalerOptions options) : options_(options) {
  if (options_.enabled())
    validate(options_);
  loaded_scale_ = options_.init_scale();
}

void GradScaler::ensure_scale(const torch::Device &device) {
  if (scale_.defined())
    return;
  auto opts = torch::TensorOptions().device(device);
  scale_ = torch::full({}, loaded_scale_, opts.dtype(torch::kFloat));
  growth_tracker_ = torch::full({}, static_cast<double>(loaded_tracker_), opts.dtype(torch::kInt));
}

void GradScaler::check_scale_exists(const char *what) const {
  if (!scale_.defined())
    throw Error(fmt::format("amp::GradScaler: attempted {}() but the scale does not exist yet: "
                            "call scale(loss) earlier in the iteration",
                            what));
}

torch::Tensor GradScaler::scale(const torch::Tensor &t) {
  if (!options_.enabled())
    return t;
  ensure_scale(t.device());
  return t * (scale_.device() == t.device() ? scale_ : scale_.to(t.device(), true));
}

std::vector<torch::Tensor> GradScaler::scale(const std::vector<torch::Tensor> &ts) {
  std::vector<torch::Tensor> out;
  out.reserve(ts.size());
  for (const auto &t : ts)
    out.push_back(scale(t));
  return out;
}

torch::Tensor GradScaler::unscale_grads(OptimizerState &state,
                                       const std::vector<torch::Tensor> &grads, bool with_norm) {
  for (std::size_t i = 0; i < grads.size(); ++i)
    if (grads[i].defined() && !grads[i].is_floating_point())
      throw Error(fmt::format("amp::GradScaler::unscale_: grad {} has dtype {}; gradients must be "
                              "floating point",
                              i, c10::toString(grads[i].scalar_type())));
  torch::NoGradGuard no_grad;
  // inv_scale = float(1 / double(scale)), on the device, no sync; the tensor is kept across steps.
  if (!inv_scale_.defined() || inv_scale_.device() != scale_.device())
    inv_scale_ = torch::empty({}, scale_.options());
  detail::inverse_scale(scale_, inv_scale_);
  const torch::Tensor &inv_scale = inv_scale_;
  state.found_inf_per_device.clear();
  const auto groups = by_device(grads);
  torch::Tensor norm;
  for (const auto &g : groups) {
    auto found_inf =
        torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat).device(g.device));
    auto inv = g.device == inv_scale.device() ? inv_scale : inv_scale.to(g.device);
    std::vector<torch::Tensor> direct, staged, staged_from;
    for (const auto &t : g.tensors) {
      if (detail::core_takes({t})) {
        direct.push_back(t);
      } else if (t.scalar_type() == torch::kFloat || t.scalar_type() == torch::kHalf ||
                 t.scalar_type() == torch::kBFloat16) {
        staged.push_back(t.contiguous()); // non-contiguous: unscale a copy, write it back
        staged_from.push_back(t);
      } else {
        direct.push_back(t); // other dtypes: the torch fallback of the dispatch
      }
    }
    if (with_norm && groups.size() == 1 && staged.empty()) {
      norm = detail::unscale_check_and_norm(direct, inv, found_inf);
    } else {
      detail::unscale_and_check(direct, inv, found_inf);
      detail::unscale_and_check(staged, inv, found_inf);
    }
    for (std::size_t k = 0; k < staged.size(); ++k)
      staged_from[k].copy_(staged[k]);
    state.found_inf_per_device.push_back(found_inf);
  }
  if (state.found_inf_per_device.empty())
    state.found_inf_per_device.push_back(torch::zeros({}, scale_.options()));
#if AMP_TORCH_DISTRIBUTED
  if (options_.collective())
    detail::reduce_found_inf(*options_.collective(), state.found_inf_per_device);
#endif
  return norm;
}

void GradScaler::unscale_(torch::optim::Optimizer &optimizer,
                          const std::vector<torch::Tensor> &grads) {
  if (!options_.enabled()) {
    // A count that does not pair up is a mistake whatever the enabled flag says.
    if (!grads.empty())
      (void)paired_params(optimizer, grads.size(), "amp::GradScaler::unscale_");
    return;
  }
  detail::restore_masters();
  check_scale_exists("unscale_");
  auto &state = per_optimizer_[&optimizer];
  if (state.stage == Stage::Unscaled)
    throw Error("unscale_() has already been called on this optimizer since the last update().");
  if (state.stage == Stage::Stepped)
    throw Error("unscale_() is being called after step().");
  check_unscalable(optimizer, grads, "amp::GradScaler::unscale_");
  // An explicit unscale_ is almost always followed by a clip of the same grads: the norm comes
  // out of the unscale's own pass, and the clip uses it while the grads are unchanged.
  auto norm = unscale_grads(state, grads, /*with_norm=*/true);
  state.unscaled = record_unscaled(grads, norm);
  detail::remember_unscaled_norm(state.unscaled);
  state.stage = Stage::Unscaled;
}

bool GradScaler::unscale_and_check(torch::optim::Optimizer &optimizer,
                                   const std::vector<torch::Tensor> &grads) {
  if (!options_.enabled()) {
    unscale_(optimizer, grads); // checks the count, unscales nothing
    return all_finite(grads);
  }
  unscale_(optimizer, grads);
  return !found_inf(per_optimizer_[&optimizer].found_inf_per_device);
}

void step(torch::optim::Optimizer &optimizer, const std::vector<torch::Tensor> &grads) {
  detail::restore_masters();
  step_with(optimizer, grads, "amp::step");
}

void GradScaler::step(torch::optim::Optimizer &optimizer, const std::vector<torch::Tensor> &grads) {
  detail::restore_masters();
  if (!options_.enabled()) {
    step_with(optimizer, grads);
    return;
  }
  check_scale_exists("step");
  auto &state = per_optimizer_[&optimizer];
  if (state.stage == Stage::Stepped)
    throw Error("step() has already been called since the last update().");
  if (state.stage == Stage::Ready) {
    check_unscalable(optimizer, grads, "amp::GradScaler::step");
    unscale_grads(state, grads);
  } else {
    check_unscaled(*state.unscaled, grads);
  }

  // The one host read of the step: whether any grad had an inf or NaN.
  if (!found_inf(state.found_inf_per_device))
    step_with(optimizer, grads);
  state.stage = Stage::Stepped;
}

void GradScaler::update() {
  if (!options_.enabled())
    return;
  check_scale_exists("update");
  std::vector<torch::Tensor> found_infs;
  for (const auto &entry : per_optimizer_)
    for (const auto &f : entry.second.found_inf_per_device)
      found_infs.push_back(f);
  if (found_infs.empty())
    throw Error("amp::GradScaler::update: no inf checks were recorded prior to update() (call "
                "unscale_ or step first)");
  torch::NoGradGuard no_grad;
  auto combined = found_infs.front().to(scale_.device());
  for (std::size_t i = 1; i < found_infs.size(); ++i)
    combined = combined + found_infs[i].to(scale_.device());
  combined = combined.contiguous(); // one optimizer on one device: the check itself, no copy
  detail::update_scale(scale_, growth_tracker_, combined, options_.growth_factor(),
                       options_.backoff_factor(), options_.growth_interval());
  per_optimizer_.clear();
}

void GradScaler::update(double new_scale) {
  if (!options_.enabled())
    return;
  check_scale_value("amp::GradScaler::update", new_scale);
  if (!scale_.defined()) {
    // Before the first scale() (a resumed run restoring its scale): the scale it will start
    // from, as load_state_dict would set it.
    loaded_scale_ = new_scale;
    per_optimizer_.clear();
    return;
  }
  torch::NoGradGuard no_grad;
  scale_.fill_(new_scale);
  per_optimizer_.clear();
}

void GradScaler::update(const torch::Tensor &new_scale) {
  if (!options_.enabled())
    return;
  if (new_scale.numel() != 1 || !new_scale.is_floating_point())
    throw Error("amp::GradScaler::update: new_scale must be a one-element floating tensor");
  // An explicit new scale is rare: checking its value is worth the one host read.
  check_scale_value("amp::GradScaler::update", new_scale.item<double>());
  if (!scale_.defined()) {
    update(new_scale.item<double>());
    return;
  }
  torch::NoGradGuard no_grad;
  scale_.copy_(new_scale.reshape({}));
  per_optimizer_.clear();
}

double GradScaler::get_scale() const {
  if (!options_.enabled())
    return 1.0;
  return scale_.defined() ? scale_.item<double>() : loaded_scale_;
}

std::int64_t GradScaler::get_growth_tracker() const {
  if (!options_.enabled())
    return 0;
  return growth_tracker_.defined() ? growth_tracker_.item<std::int64_t>() : loaded_tracker_;
}

std::map<std::string, double> GradScaler::state_dict() const {
  if (!options_.enabled())
    return {};
  return {{"scale", get_scale()},
          {"growth_factor", options_.growth_factor()},
          {"backoff_factor", options_.backoff_factor()},
          {"growth_interval", static_cast<double>(options_.growth_interval())},
          {"_growth_tracker", static_cast<double>(get_growth_tracker())}};
}

void GradScaler::load_state_dict(const std::map<std::string, double> &state) {
  if (!options_.enabled())
    return;
  if (state.empty())
    throw Error("amp::GradScaler::load_state_dict: the source state dict is empty, possibly "
                "because it was saved from a disabled GradScaler");
  // Every field is checked before anything changes: a bad dict leaves the scaler as it was.
  auto get = [&](const char *key) {
    auto it = state.find(key);
    if (it == state.end())
      throw Error(fmt::format("amp::GradScaler::load_state_dict: missing key '{}'", key));
    return it->second;
  };
  auto bad = [](const char *key, const char *want, double got) {
    return Error(fmt::format("amp::GradScaler::load_state_dict: '{}' must be {}, got {:g}", key,
                             want, got));
  };
  // Integers are checked as doubles first: casting a NaN or an out-of-range double is undefined.
  auto integer_in = [&](const char *key, double lo, double hi, const char *want) {
    const double v = get(key);
    if (!(v >= lo && v < hi) || v != std::floor(v))
      throw bad(key, want, v);
    return static_cast<std::int64_t>(v);
  };
  const double scale = get("scale");
  if (!positive_finite_f32(scale))
    throw bad("scale", "finite and > 0 (as fp32)", scale);
  const double growth = get("growth_factor");
  if (!(growth > 1) || !positive_finite_f32(growth))
    throw bad("growth_factor", "finite and > 1", growth);
  const double backoff = get("backoff_factor");
  if (!(backoff < 1) || !positive_finite_f32(backoff))
    throw bad("backoff_factor", "in (0, 1)", backoff);
  constexpr double kInt32End = 2147483648.0; // 2^31
  const std::int64_t interval =
      integer_in("growth_interval", 1, kInt32End, "an integer in [1, 2^31)");
  // The tracker counts clean steps since the last growth: it is reset on reaching the interval.
  const double tracker_value = get("_growth_tracker");
  if (!(tracker_value >= 0 && tracker_value < static_cast<double>(interval)) ||
      tracker_value != std::floor(tracker_value))
    throw Error(fmt::format("amp::GradScaler::load_state_dict: '_growth_tracker' must be an "
                            "integer in [0, growth_interval = {}), got {:g}",
                            interval, tracker_value));
  const auto tracker = static_cast<std::int64_t>(tracker_value);

  options_.growth_factor(growth).backoff_factor(backoff).growth_interval(interval);
  loaded_scale_ = scale;
  loaded_tracker_ = tracker;
  if (scale_.defined()) {
    torch::NoGradGuard no_grad;
    scale_.fill_(loaded_scale_);
    growth_tracker_.fill_(loaded_tracker_);
  }
}

} // namespace amp
