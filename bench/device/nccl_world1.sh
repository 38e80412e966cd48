#!/usr/bin/env bash
# NCCL at world size 1 on a lent GPU: builds bench/device/nccl (the runtime with its CUDA backend,
# the libtorch binding on CUDA tensors, test/torch's amp_torch_nccl_world1) against the device's
# PyTorch and runs it: all_reduce_grads in buckets of three dtypes, the GradScaler's found_inf
# reduced with MAX, global_norm/clip with the group, training with and without the group, an error
# naming op and rank (docs/distributed.md, "NCCL"). Output in $OUT/nccl_world1.txt.
#
#   OUT=<dir> bench/device/nccl_world1.sh [--build-only | --run-only]
#
# bench/device/run.sh calls it (the build in the background during its own, then the run); alone:
#   bench/device/prepare.sh
#   run(command="OUT=$OUT bench/device/nccl_world1.sh", carry=["build-device-carry"], timeout_s=420)
# Needs cmake >= 3.20, nvcc, a CUDA libtorch (AMP_TORCH_ROOT=<...>/torch, else python3's torch), fmt
# (installed, or carried: build-device-carry/fmt/include, or AMP_FMT_INCLUDE_DIR) and nccl.h (torch's
# nvidia-nccl package, the CUDA toolkit, /usr/include, carried build-device-carry/nccl/include, or
# AMP_NCCL_INCLUDE_DIR). Exit 0: pass, 1: fail, 77: no GPU (the program skipped).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${OUT:-$ROOT/device-out}
BUILD=${AMP_NCCL_BUILD:-/tmp/amp-nccl-device-build}
JOBS=${AMP_JOBS:-$(nproc)}
CARRY=$ROOT/build-device-carry
mode=all
case ${1:-} in
  --build-only) mode=build ;;
  --run-only) mode=run ;;
  "") ;;
  *) echo "usage: nccl_world1.sh [--build-only | --run-only]"; exit 2 ;;
esac
mkdir -p "$OUT"
say() { echo "nccl_world1: $*"; }

if [[ $mode != run ]]; then
  torch_root=${AMP_TORCH_ROOT:-}
  [[ -n $torch_root ]] || torch_root=$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2>/dev/null || true)
  [[ -n $torch_root ]] || torch_root=$(ls -d /opt/amp-deps/torch-2.*/torch 2>/dev/null | head -n1 || true)
  if [[ -z $torch_root || ! -f $torch_root/lib/libtorch_cuda.so ]]; then
    say "FAIL: no CUDA libtorch found (set AMP_TORCH_ROOT=<...>/torch)"; exit 1
  fi
  say "libtorch at $torch_root"

  fmt_args=()
  if [[ -n ${AMP_FMT_INCLUDE_DIR:-} ]]; then
    fmt_args=(-DAMP_FMT_INCLUDE_DIR="$AMP_FMT_INCLUDE_DIR")
  elif [[ -f $CARRY/fmt/include/fmt/format.h ]]; then
    fmt_args=(-DAMP_FMT_INCLUDE_DIR="$CARRY/fmt/include") # used only if no fmt package is installed
  fi

  # nccl.h: the one of torch's own NCCL package first (the version its libtorch_cuda loads).
  nccl_dir=${AMP_NCCL_INCLUDE_DIR:-}
  if [[ -z $nccl_dir ]]; then
    for candidate in "$torch_root/../nvidia/nccl/include" /usr/local/cuda/include /usr/include \
                     "$CARRY/nccl/include"; do
      if [[ -f $candidate/nccl.h ]]; then nccl_dir=$(cd "$candidate" && pwd); break; fi
    done
  fi
  if [[ -z $nccl_dir ]]; then
    say "FAIL: no nccl.h (run bench/device/prepare.sh and carry build-device-carry, or set AMP_NCCL_INCLUDE_DIR)"; exit 1
  fi
  say "nccl.h from $nccl_dir ($(grep -m1 -E '^#define NCCL_VERSION_CODE' "$nccl_dir/nccl.h" | awk '{print $3}')); torch's NCCL: $(python3 -c 'import torch; print(torch.cuda.nccl.version())' 2>/dev/null || echo '?')"

  GEN=()
  command -v ninja >/dev/null && GEN=(-G Ninja)
  cmake -S "$ROOT/bench/device/nccl" -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
        -DTorch_DIR="$torch_root/share/cmake/Torch" -DCMAKE_CUDA_ARCHITECTURES=90 \
        -DAMP_NCCL_INCLUDE_DIR="$nccl_dir" "${fmt_args[@]}" > "$OUT/nccl_configure.log" 2>&1 \
    || { tail -30 "$OUT/nccl_configure.log"; say "FAIL: configure (log: nccl_configure.log)"; exit 1; }
  grep -E "amp runtime: fmt|amp::torch:|test/torch: .*NCCL" "$OUT/nccl_configure.log"
  start=$(date +%s)
  cmake --build "$BUILD" -j "$JOBS" --target amp_torch_nccl_world1 > "$OUT/nccl_build.log" 2>&1 \
    || { tail -40 "$OUT/nccl_build.log"; say "FAIL: build (log: nccl_build.log)"; exit 1; }
  say "built in $(( $(date +%s) - start )) s"
fi

if [[ $mode != build ]]; then
  binary=$BUILD/torch/amp_torch_nccl_world1
  [[ -x $binary ]] || { say "FAIL: $binary was not built"; exit 1; }
  # NCCL_DEBUG=WARN: NCCL's own reason lands in the output when a collective fails.
  NCCL_DEBUG=${NCCL_DEBUG:-WARN} timeout 120 "$binary" > "$OUT/nccl_world1.txt" 2>&1
  rc=$?
  cat "$OUT/nccl_world1.txt"
  case $rc in
    0) say "PASS" ;;
    77) say "SKIPPED: no GPU visible" ;;
    124) say "FAIL: timed out after 120 s (a hang in NCCL init or a collective?)" ;;
    *) say "FAIL: exit $rc" ;;
  esac
  exit $rc
fi
