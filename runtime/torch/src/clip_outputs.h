// Which grads are unscaled: the tensor memory GradScaler::unscale_ unscaled, and the outputs of
// amp::clip_by_global_norm with what each was computed from (so that step() accepts clipped
// unscaled grads and rejects still-scaled ones).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace amp::detail {

/// A monotonic count of unscale_ and clip calls: orders "computed from X" after "X was unscaled".
std::uint64_t next_event();

/// The memory a tensor views: its storage (weakly: the record keeps no data alive, and the storage
/// object cannot be reused at the same address while it is held), data pointer and shape.
class TensorMemory {
public:
  TensorMemory() = default;
  explicit TensorMemory(const at::Tensor &t);
  /// Whether `t` views exactly this memory (same storage, data pointer and shape).
  bool is(const at::Tensor &t) const;
  /// Whether both record the same memory (live or not).
  bool same(const TensorMemory &other) const;
  bool defined() const { return defined_; }
  /// Whether the storage has been freed.
  bool expired() const;

private:
  c10::weak_intrusive_ptr<c10::StorageImpl> storage_{c10::intrusive_ptr<c10::StorageImpl>()};
  const void *data_ = nullptr;
  std::vector<std::int64_t> sizes_;
  bool defined_ = false;
};

/// What one unscale_ call unscaled, in list order, and when (GradScaler::step checks its grads
/// against it).
struct UnscaledGrads {
  std::vector<TensorMemory> grads;
  std::uint64_t event = 0;
  /// The global norm of the unscaled grads, computed in the unscale's own pass (undefined when
  /// that pass did not compute it), and each grad's version counter right after the unscale.
  at::Tensor norm;
  std::vector<std::int64_t> versions;
};

/// The norm of the last explicit unscale_ on this thread, for the clip that usually follows
/// (scaler.unscale_(opt, grads); amp::clip_by_global_norm_(grads, max_norm)): the clip then
/// reads the grads once instead of twice. `record` must carry the norm and the versions.
void remember_unscaled_norm(const std::shared_ptr<const UnscaledGrads> &record);
/// That norm if `xs` is exactly the list it was computed for, unchanged since: the same memory
/// in the same order (undefined entries alike) and every version counter where the unscale left
/// it (any torch in-place op on a grad or a view of it moves the counter). Undefined otherwise.
/// Writes that bypass the version counters (raw data pointers, a collective writing the memory
/// directly) are not seen: the runtime's own (clip_by_global_norm_, all_reduce_grads) call
/// forget_unscaled_norm().
at::Tensor unscaled_norm_for(const std::vector<at::Tensor> &xs);
void forget_unscaled_norm();

/// Records that clip output `out` was computed from `from` now (after every unscale_ so far).
/// Called once per output of one clip call, then end_clip_call().
void record_clip_output(const at::Tensor &out, const at::Tensor &from);
/// Ends one clip call: forgets the links of outputs that have been freed.
void end_clip_call();

/// Whether `t` is the memory `unscaled` (recorded by an unscale_ at event `since`) or a clip
/// output computed from it after that event, directly or through further clips (`unscaled` may
/// have been freed since: `grads = amp::clip_by_global_norm(grads, n)` drops it).
bool derives_from(const at::Tensor &t, const TensorMemory &unscaled, std::uint64_t since);

} // namespace amp::detail
