// The unscaled-grad records and the clip outputs' lineage (see clip_outputs.h).
#include "clip_outputs.h"

#include <atomic>
#include <mutex>
#include <unordered_map>

namespace amp::detail {

std::uint64_t next_event() {
  static std::atomic<std::uint64_t> events{0};
  return ++events;
}

TensorMemory::TensorMemory(const at::Tensor &t) {
  if (!t.defined() || !t.has_storage())
    return;
  storage_ = t.storage().getWeakStorageImpl();
  data_ = t.data_ptr();
  sizes_.assign(t.sizes().begin(), t.sizes().end());
  defined_ = true;
}

// The weak references pin the StorageImpl objects' addresses, so equal pointers are the same
// storage even after its data was freed.
bool TensorMemory::is(const at::Tensor &t) const {
  return defined_ && t.defined() && t.has_storage() &&
         storage_._unsafe_get_target() == t.storage().unsafeGetStorageImpl() &&
         data_ == t.data_ptr() && t.sizes() == at::IntArrayRef(sizes_);
}

bool TensorMemory::same(const TensorMemory &o) const {
  return defined_ && o.defined_ && storage_._unsafe_get_target() == o.storage_._unsafe_get_target() &&
         data_ == o.data_ && sizes_ == o.sizes_;
}

bool TensorMemory::expired() const { return storage_.expired(); }

namespace {

/// One input a clip output was computed from (directly, or through earlier clips), and when.
struct Ancestor {
  TensorMemory memory;
  std::uint64_t event = 0; ///< when the next clip down the chain read it
};

/// One clip output: the memory it is and its ancestry, nearest first (the ancestry is copied
/// into each new output, so links of freed outputs can go).
struct Link {
  TensorMemory out;
  std::vector<Ancestor> ancestors;
};

/// Longer chains of clips of clips keep only their nearest inputs.
constexpr std::size_t kMaxAncestors = 8;

class ClipOutputs {
public:
  void record(const at::Tensor &out, const at::Tensor &from) {
    std::lock_guard<std::mutex> lock(mutex_);
    TensorMemory out_memory(out);
    if (!out_memory.defined())
      return;
    Link link{out_memory, {{TensorMemory(from), next_event()}}};
    if (from.defined() && from.has_storage()) {
      auto parent = links_.find(from.storage().unsafeGetStorageImpl());
      if (parent != links_.end() && parent->second.out.is(from))
        for (const Ancestor &a : parent->second.ancestors)
          if (link.ancestors.size() < kMaxAncestors)
            link.ancestors.push_back(a);
    }
    links_[out.storage().unsafeGetStorageImpl()] = std::move(link);
  }

  void end_call() {
    std::lock_guard<std::mutex> lock(mutex_);
    // Links of freed outputs: nothing asks about them any more (their descendants carry copies).
    for (auto it = links_.begin(); it != links_.end();)
      it = it->second.out.expired() ? links_.erase(it) : std::next(it);
  }

  bool derives_from(const at::Tensor &t, const TensorMemory &unscaled, std::uint64_t since) {
    if (unscaled.is(t))
      return true;
    if (!t.defined() || !t.has_storage())
      return false;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = links_.find(t.storage().unsafeGetStorageImpl());
    if (it == links_.end() || !it->second.out.is(t))
      return false;
    for (const Ancestor &a : it->second.ancestors)
      if (a.memory.same(unscaled))
        return a.event > since; // read after the unscale, or still scaled
    return false;
  }

private:
  std::mutex mutex_;
  std::unordered_map<const c10::StorageImpl *, Link> links_;
};

ClipOutputs &clip_outputs() {
  static ClipOutputs *outputs = new ClipOutputs; // never destroyed: used until exit
  return *outputs;
}

} // namespace

void record_clip_output(const at::Tensor &out, const at::Tensor &from) {
  clip_outputs().record(out, from);
}

void end_clip_call() { clip_outputs().end_call(); }

bool derives_from(const at::Tensor &t, const TensorMemory &unscaled, std::uint64_t since) {
  return clip_outputs().derives_from(t, unscaled, since);
}

namespace {
// Weak: the scaler owns the record (until its next unscale_); the memo keeps nothing alive.
thread_local std::weak_ptr<const UnscaledGrads> last_unscaled;
} // namespace

void remember_unscaled_norm(const std::shared_ptr<const UnscaledGrads> &record) {
  if (record && record->norm.defined() && record->versions.size() == record->grads.size())
    last_unscaled = record;
  else
    last_unscaled.reset();
}

at::Tensor unscaled_norm_for(const std::vector<at::Tensor> &xs) {
  auto record = last_unscaled.lock();
  if (!record || record->grads.size() != xs.size())
    return {};
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const auto &t = xs[i];
    if (!t.defined()) {
      if (record->grads[i].defined())
        return {};
      continue;
    }
    if (t.is_inference() || !record->grads[i].is(t) || t._version() != record->versions[i])
      return {};
  }
  return record->norm;
}

void forget_unscaled_norm() { last_unscaled.reset(); }

} // namespace amp::detail
