// The runtime's list operations, each declared once: its functor (functors.h) and the name of its
// entry in the CUDA backend's table. Every place that lists the operations expands this table: the
// CPU and CUDA instantiations of apply (cpu/apply.cpp, cuda/apply.cu), the backend table's entries
// and the dispatch to them (cuda_backend.h), and the table the backend hands over
// (cuda/backend_entry.cpp). Adding an operation is its functor, one line here, its entry point in
// ops.cpp and its tests. The order is the backend table's layout (kCudaBackendAbi): append only.
#pragma once

#define AMP_LIST_OPS(X)                                                                            \
  X(UnscaleAndCheck, unscale_and_check)                                                            \
  X(SumOfSquares, sum_of_squares)                                                                  \
  X(ClipByNorm, clip_by_norm)                                                                      \
  X(CastCopy, cast_copy)                                                                           \
  X(SgdStep, sgd_step)                                                                             \
  X(AdamStep, adam_step)
