// Compile-only check of the collectives' signatures: both a c10d::ProcessGroup (libtorch 1.x's
// Gloo/NCCL groups) and a c10d::Backend (2.x's) convert to amp::ProcessGroupRef. Built in the main
// build and in e2e.torch2's build against libtorch 2.x, where no multi-rank test runs.
#include <amp/torch.h>

#include <vector>

namespace amp_check {

void with_process_group(const c10::intrusive_ptr<c10d::ProcessGroup> &pg,
                        std::vector<torch::Tensor> &grads) {
  amp::all_reduce_grads(grads, pg);
  amp::all_reduce_grads(grads, pg, /*average=*/false, /*bucket_bytes=*/1 << 20);
  amp::GradScaler scaler(amp::GradScalerOptions().process_group(pg));
  grads = amp::clip_by_global_norm(grads, 1.0, pg);
  (void)amp::global_norm(grads, pg);
}

#if AMP_TORCH_C10D_BACKEND
void with_backend(const c10::intrusive_ptr<c10d::Backend> &backend,
                  std::vector<torch::Tensor> &grads) {
  amp::all_reduce_grads(grads, backend);
  amp::GradScaler scaler(amp::GradScalerOptions().process_group(backend));
  grads = amp::clip_by_global_norm(grads, 1.0, backend);
  (void)amp::global_norm(grads, backend);
}
#endif

} // namespace amp_check
