// How the CUDA multi-tensor apply packs lists into launches: the kernel-argument tables and the
// packing loop. Host-only code (no CUDA types), so the CPU test suite checks it without a GPU.
#pragma once

#include "backend.h"

#include <cstdint>

namespace amp::detail::cuda_plan {

constexpr int kMaxBlocks = 2048;

/// Tensors per launch, sized so Meta<L> stays under the 32 764-byte kernel parameter limit
/// (CUDA >= 12.1, sm >= 70).
template <int L> struct Limits;
template <> struct Limits<1> { static constexpr int tensors = 512; };
template <> struct Limits<2> { static constexpr int tensors = 512; };
template <> struct Limits<4> { static constexpr int tensors = 320; };
template <> struct Limits<5> { static constexpr int tensors = 256; };

/// One launch's metadata, passed by value as the kernel argument: per tensor slot a pointer and a
/// dtype per list, numel and a vectorisable flag; per block the (slot, chunk) it works on.
template <int L> struct Meta {
  static constexpr int kTensors = Limits<L>::tensors;
  void *ptr[L][kTensors];
  std::int64_t numel[kTensors];
  std::uint8_t dtype[L][kTensors];
  std::uint8_t vec_ok[kTensors];
  std::uint16_t block_tensor[kMaxBlocks];
  std::int32_t block_chunk[kMaxBlocks];
};
static_assert(sizeof(Meta<1>) < 30000, "kernel parameter budget");
static_assert(sizeof(Meta<2>) < 30000, "kernel parameter budget");
static_assert(sizeof(Meta<4>) < 30000, "kernel parameter budget");
static_assert(sizeof(Meta<5>) < 30000, "kernel parameter budget");

/// Bytes a 4-element vector access needs the pointer aligned to.
inline std::size_t vector_bytes(DType t) { return t == DType::F32 ? 16 : 8; }

/// Fills `meta` with the tensors of args.lists (list 0 gives the numels) and calls
/// `launch(blocks)` whenever the block table or the tensor table is full, and once at the end.
/// Blocks are issued in plan_chunks order, so block k of the whole call is chunk k of the list.
/// A tensor cut by a full block table carries over as slot 0 of the next table.
template <int L, class Launch>
void pack_launches(const ApplyArgs &args, Meta<L> &meta, Launch &&launch) {
  const std::vector<TensorView> &first = *args.lists[0];
  int blocks = 0;
  int slot = 0;
  for (std::size_t i = 0; i < first.size(); ++i) {
    const std::int64_t numel = first[i].numel;
    if (numel == 0)
      continue;
    bool aligned = true;
    for (int l = 0; l < L; ++l) {
      const std::vector<TensorView> *list = args.lists[static_cast<std::size_t>(l)];
      if (!list) {
        meta.ptr[l][slot] = nullptr;
        meta.dtype[l][slot] = 0;
        continue;
      }
      const TensorView &v = (*list)[i];
      meta.ptr[l][slot] = v.data;
      meta.dtype[l][slot] = static_cast<std::uint8_t>(v.dtype);
      aligned = aligned && reinterpret_cast<std::uintptr_t>(v.data) % vector_bytes(v.dtype) == 0;
    }
    meta.numel[slot] = numel;
    meta.vec_ok[slot] = aligned ? 1 : 0;

    const std::int64_t chunks = chunk_count(numel);
    for (std::int64_t c = 0; c < chunks; ++c) {
      meta.block_tensor[blocks] = static_cast<std::uint16_t>(slot);
      meta.block_chunk[blocks] = static_cast<std::int32_t>(c);
      ++blocks;
      const bool last_chunk = c + 1 == chunks;
      if (blocks < kMaxBlocks && !(last_chunk && slot + 1 == Meta<L>::kTensors))
        continue;
      launch(blocks);
      blocks = 0;
      if (last_chunk) {
        slot = -1; // the next tensor starts a fresh table
        continue;
      }
      for (int l = 0; l < L; ++l) {
        meta.ptr[l][0] = meta.ptr[l][slot];
        meta.dtype[l][0] = meta.dtype[l][slot];
      }
      meta.numel[0] = meta.numel[slot];
      meta.vec_ok[0] = meta.vec_ok[slot];
      slot = 0;
    }
    ++slot;
  }
  if (blocks > 0)
    launch(blocks);
}

} // namespace amp::detail::cuda_plan
