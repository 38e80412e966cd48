// The unscaled-grad records and the clip outputs' lineage and memory reuse (see clip_outputs.h).
#include "clip_outputs.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <mutex>
#include <tuple>
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

struct Pooled {
  at::Tensor tensor;
  std::uint64_t last_call = 0;
};

using ShapeKey = std::tuple<std::vector<std::int64_t>, int, int, int>;

ShapeKey shape_key(const at::Tensor &t) {
  return {std::vector<std::int64_t>(t.sizes().begin(), t.sizes().end()),
          static_cast<int>(t.scalar_type()), static_cast<int>(t.device().type()),
          static_cast<int>(t.device().index())};
}

/// Outputs not reused by this many later calls leave the pool (their memory is the caller's
/// alone again, or freed): one clip per optimizer per step stays pooled for up to four optimizers.
constexpr std::uint64_t kKeepCalls = 4;
/// Pooled outputs looked at per requested output: bounds the cost when many are still in use.
constexpr std::size_t kMaxTries = 8;

class ClipOutputs {
public:
  at::Tensor output_like(const at::Tensor &in) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::deque<Pooled> &bucket = pool_[shape_key(in)];
    // A few candidates, oldest first; one still in use (by the caller, or this very call) goes to
    // the back, to be tried again by a later call.
    for (std::size_t tries = std::min(bucket.size(), kMaxTries); tries > 0; --tries) {
      Pooled candidate = std::move(bucket.front());
      bucket.pop_front();
      const bool reuse = candidate.last_call < call_ && reusable(candidate.tensor, in);
      if (reuse)
        candidate.last_call = call_;
      bucket.push_back(candidate);
      if (reuse)
        return candidate.tensor;
    }
    at::Tensor out = at::empty(in.sizes(), in.options().memory_format(at::MemoryFormat::Contiguous));
    bucket.push_back({out, call_});
    return out;
  }

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
    for (auto it = pool_.begin(); it != pool_.end();) {
      std::deque<Pooled> &bucket = it->second;
      bucket.erase(std::remove_if(bucket.begin(), bucket.end(),
                                  [&](const Pooled &p) { return p.last_call + kKeepCalls <= call_; }),
                   bucket.end());
      it = bucket.empty() ? pool_.erase(it) : std::next(it);
    }
    ++call_;
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
  /// Only the pool references the tensor and its memory: no other tensor, view or weak
  /// reference (a scaler's record, a link of a later clip) can see the memory change.
  /// The tensor must also still be what was handed out: `in`'s shape, contiguous, no autograd.
  static bool reusable(const at::Tensor &t, const at::Tensor &in) {
    if (t.use_count() != 1 || t.weak_use_count() != 1 || t.storage().use_count() != 1)
      return false;
    if (t.sizes() != in.sizes() || !t.is_contiguous() || t.requires_grad())
      return false;
    // The storage's weak count: 1 for its strong references + this table's own link (a scaler's
    // record or a later clip's ancestry adds one).
    const auto weak = t.storage().getWeakStorageImpl();
    return weak.weak_use_count() == 3; // + the `weak` just taken
  }

  std::mutex mutex_;
  std::map<ShapeKey, std::deque<Pooled>> pool_;
  std::unordered_map<const c10::StorageImpl *, Link> links_;
  std::uint64_t call_ = 1;
};

ClipOutputs &clip_outputs() {
  static ClipOutputs *outputs = new ClipOutputs; // never destroyed: used until exit
  return *outputs;
}

} // namespace

at::Tensor clip_output_like(const at::Tensor &in) { return clip_outputs().output_like(in); }

void record_clip_output(const at::Tensor &out, const at::Tensor &from) {
  clip_outputs().record(out, from);
}

void end_clip_call() { clip_outputs().end_call(); }

bool derives_from(const at::Tensor &t, const TensorMemory &unscaled, std::uint64_t since) {
  return clip_outputs().derives_from(t, unscaled, since);
}

} // namespace amp::detail
