#!/usr/bin/env bash
# Checks the compiled CUDA code of the runtime without a GPU (ctest runtime.cuda.code):
#   1. no multiply-add contraction in the element-wise kernels: the PTX has no fma.rn.f32 (what
#      -fmad=false guarantees, and what keeps CPU and GPU bit-equal; sqrt and division stay single
#      IEEE PTX instructions, sqrt.rn / div.rn);
#   2. the multi-tensor kernels use 16-byte (fp32) and 8-byte (fp16/bf16) global loads on sm_90.
# Needs cuobjdump (CUDA toolkit; or PyPI's nvidia-cuda-cuobjdump): without it, skipped (exit 77).
#   check_cuda_code.sh <library with the CUDA kernels>
set -uo pipefail
lib=$1
tool=${CUOBJDUMP:-}
[ -z "$tool" ] && tool=$(command -v cuobjdump || true)
[ -z "$tool" ] && [ -x /usr/local/cuda/bin/cuobjdump ] && tool=/usr/local/cuda/bin/cuobjdump
if [ -z "$tool" ]; then
  echo "SKIP: cuobjdump not found (set CUOBJDUMP=..., or pip install nvidia-cuda-cuobjdump)"
  exit 77
fi
ptx=$("$tool" -ptx "$lib" 2>&1) || { echo "FAIL: $tool -ptx $lib: $ptx"; exit 1; }
if [ -z "$(grep -m1 'multi_tensor_kernel' <<<"$ptx")" ]; then
  echo "FAIL: no multi_tensor_kernel in the PTX of $lib"; exit 1
fi
fma=$(grep -c 'fma\.rn\.f32' <<<"$ptx")
if [ "$fma" != 0 ]; then
  echo "FAIL: $fma fma.rn.f32 in the PTX: the CUDA code was compiled with contraction (-fmad=false missing)"
  exit 1
fi
echo "ok: no fma.rn.f32 in the PTX; $(grep -c 'sqrt\.rn\.f32' <<<"$ptx") sqrt.rn.f32, $(grep -c 'div\.rn\.f32' <<<"$ptx") div.rn.f32"
sass=$("$tool" -sass -arch sm_90 "$lib" 2>&1) || { echo "FAIL: $tool -sass $lib: $sass"; exit 1; }
for load in 'LDG.E.128' 'LDG.E.64'; do
  count=$(grep -c "$load" <<<"$sass")
  if [ "$count" = 0 ]; then
    echo "FAIL: no $load in the sm_90 SASS"; exit 1
  fi
  echo "ok: $count $load in the sm_90 SASS"
done
