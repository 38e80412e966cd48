#!/usr/bin/env bash
# One call on a lent GPU machine (H200): build the runtime for sm_90, run every CUDA test, and time
# its ops against PyTorch on the same tensors. Results go to $OUT (results.md, results.json, run.log,
# ctest-junit.xml, cuda-gtest.txt) and into the "Runtime (CUDA, H200)" block of docs/performance.md,
# whose updated copy is also left in $OUT/performance.md (the device machine works on a copy of the
# tree). It also runs the NCCL world-size-1 check (bench/device/nccl_world1.sh: built in the
# background during the main build, run after the tests; output in nccl_world1.txt). Budget: about
# 2 min build on 16 cores, 1 min tests, under 1 min NCCL check, 3-4 min timings; inside 10 min.
#
# Prepare on the development machine (the device image has no GoogleTest and no fmt), then one call:
#   bench/device/prepare.sh            # copies GoogleTest's sources, fmt's headers and nccl.h to
#                                      # build-device-carry/ (ignored)
#   run(command="OUT=$OUT bench/device/run.sh", carry=["build-device-carry"], timeout_s=600)
#
#   OUT=/some/dir bench/device/run.sh [--quick] [--no-docs] [--no-nccl]
#
# Needs: cmake >= 3.20, nvcc (CUDA >= 12.1: 32 KB kernel arguments), a C++17 compiler, python3 with
# torch (CUDA), GoogleTest: installed, or sources in AMP_GTEST_SOURCE_DIR,
# build-device-carry/googletest or shared/googletest, and fmt: installed, or headers in
# AMP_FMT_INCLUDE_DIR or build-device-carry/fmt/include. Without GoogleTest it stops before building
# (exit 2): a run without the CUDA tests is not a result. cuBLASLt is optional: when its header or
# library is missing the GEMM test and the GEMM timings are skipped with that reason, all else runs.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${OUT:-$ROOT/device-out}
BUILD=${BUILD:-/tmp/amp-runtime-device-build}
QUICK=""
UPDATE_DOCS=1
NCCL=1
for arg in "$@"; do
  case $arg in
    --quick) QUICK="--quick" ;;
    --no-docs) UPDATE_DOCS=0 ;;
    --no-nccl) NCCL=0 ;;
  esac
done
mkdir -p "$OUT"
exec > >(tee "$OUT/run.log") 2>&1
status=0
step() { echo; echo "==== $* ($(date -u +%H:%M:%S))"; }
fail() { echo "FAIL: $*"; status=1; }

step "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv || true
nvcc --version | tail -2 || true
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))' || true
nproc

step "GoogleTest and cuBLASLt"
GTEST_SRC=${AMP_GTEST_SOURCE_DIR:-}
for candidate in "$ROOT/build-device-carry/googletest" "$ROOT/shared/googletest" /usr/src/googletest; do
  [ -z "$GTEST_SRC" ] && [ -f "$candidate/CMakeLists.txt" ] && GTEST_SRC=$candidate
done
if [ -n "$GTEST_SRC" ]; then
  echo "GoogleTest sources: $GTEST_SRC"
elif [ -f /usr/lib/x86_64-linux-gnu/cmake/GTest/GTestConfig.cmake ] || [ -f /usr/lib/cmake/GTest/GTestConfig.cmake ] \
    || [ -f /usr/local/lib/cmake/GTest/GTestConfig.cmake ]; then
  echo "GoogleTest: installed package"
else
  echo "FAIL: no GoogleTest (neither installed nor carried): run bench/device/prepare.sh and carry"
  echo "      build-device-carry, or set AMP_GTEST_SOURCE_DIR. Nothing was built."
  exit 2
fi
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
CUDA_HOME_GUESS=$(cd "$(dirname "$NVCC")/.." && pwd)
header=$(find "$CUDA_HOME_GUESS/include" "$CUDA_HOME_GUESS"/targets/*/include -maxdepth 1 -name cublasLt.h 2>/dev/null | head -1)
library=$(find "$CUDA_HOME_GUESS"/lib64 "$CUDA_HOME_GUESS"/lib "$CUDA_HOME_GUESS"/targets/*/lib /usr/lib/x86_64-linux-gnu \
  -maxdepth 1 -name 'libcublasLt.so*' 2>/dev/null | head -1)
if [ -n "$header" ] && [ -n "$library" ]; then
  echo "cuBLASLt: $header, $library"
  HAVE_CUBLASLT=1
else
  echo "cuBLASLt: NOT FOUND (header: ${header:-missing}, library: ${library:-missing}): the GEMM test and timings will be skipped"
  HAVE_CUBLASLT=0
fi

# fmt's headers for the runtime when no fmt package is installed (runtime/CMakeLists.txt).
FMT_ARGS=()
FMT_DIR=${AMP_FMT_INCLUDE_DIR:-$ROOT/build-device-carry/fmt/include}
[ -f "$FMT_DIR/fmt/format.h" ] && FMT_ARGS=(-DAMP_FMT_INCLUDE_DIR="$FMT_DIR")

if [ "$NCCL" = 1 ]; then
  step "NCCL world-size-1 check: build started in the background (log: nccl_build_step.log)"
  OUT="$OUT" bash "$ROOT/bench/device/nccl_world1.sh" --build-only > "$OUT/nccl_build_step.log" 2>&1 &
  NCCL_BUILD_PID=$!
  trap '[ -n "$NCCL_BUILD_PID" ] && kill "$NCCL_BUILD_PID" 2>/dev/null' EXIT # an early exit below
fi

step "configure (sm_90, Release)"
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
cmake -S "$ROOT/bench/device" -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DAMP_GTEST_SOURCE_DIR="$GTEST_SRC" "${FMT_ARGS[@]}" > "$OUT/configure.log" 2>&1
configured=$?
cat "$OUT/configure.log"
[ "$configured" = 0 ] || { echo "FAIL: configure"; exit 1; }
if grep -q "cuBLASLt not found" "$OUT/configure.log" && [ "$HAVE_CUBLASLT" = 1 ]; then
  fail "cuBLASLt was found by this script but not by CMake (see configure.log)"
fi

step "build"
cmake --build "$BUILD" -j "$(nproc)" || exit 1
for binary in test/runtime/runtime_core_tests test/runtime/runtime_cuda_tests; do
  if [ ! -x "$BUILD/$binary" ]; then
    echo "FAIL: $BUILD/$binary was not built (GoogleTest or CUDA not configured?)"
    exit 1
  fi
done

step "CUDA and CPU tests (ctest -R runtime)"
ctest --test-dir "$BUILD" -R runtime -j 8 --output-on-failure \
  --output-junit "$OUT/ctest-junit.xml" || fail "ctest"
"$BUILD/test/runtime/runtime_cuda_tests" > "$OUT/cuda-gtest.txt" 2>&1 || fail "runtime_cuda_tests"
tail -3 "$OUT/cuda-gtest.txt"
# A skipped CUDA test is a failure of this run, except the GEMM without cuBLASLt (said above).
skipped=$(grep '^\[  SKIPPED \] [A-Za-z]' "$OUT/cuda-gtest.txt" | sed 's/^\[  SKIPPED \] //; s/ (.*//' || true)
unexpected=0
for t in $skipped; do
  if [ "$HAVE_CUBLASLT" = 0 ] && [ "$t" = "CudaScalars.GemmMatchesCpuReference" ]; then
    echo "skipped as expected without cuBLASLt: $t"
  else
    unexpected=$((unexpected + 1))
    [ "$unexpected" -le 5 ] && echo "SKIPPED: $t"
  fi
done
[ "$unexpected" = 0 ] || fail "$unexpected CUDA tests SKIPPED (reasons in cuda-gtest.txt: no GPU visible? not enough memory?)"

if [ "$NCCL" = 1 ]; then
  step "NCCL world-size-1 check (bench/device/nccl_world1.sh)"
  wait "$NCCL_BUILD_PID"
  nccl_built=$?
  NCCL_BUILD_PID=""
  cat "$OUT/nccl_build_step.log"
  if [ "$nccl_built" != 0 ]; then
    fail "NCCL check: build (nccl_build_step.log, nccl_build.log)"
  else
    OUT="$OUT" bash "$ROOT/bench/device/nccl_world1.sh" --run-only
    nccl_rc=$?
    # 77 (no GPU visible) is a failure here: this script runs only where a GPU is lent.
    [ "$nccl_rc" = 0 ] || fail "NCCL check: exit $nccl_rc (nccl_world1.txt)"
  fi
fi

step "scaler checkpoint fixture vs this PyTorch's torch.save"
python3 "$ROOT/test/torch/data/make_scaler_state.py" --check "$ROOT/test/torch/data/scaler_state.pt" \
  || fail "test/torch/data/scaler_state.pt does not match torch.save"

step "timings vs PyTorch"
CAPI=$(find "$BUILD" -name 'libamp_runtime_capi.so' | head -1)
[ -n "$CAPI" ] || fail "libamp_runtime_capi.so was not built"
timeout 420 python3 "$ROOT/bench/device/bench_vs_torch.py" --capi "$CAPI" --out "$OUT" $QUICK || fail "bench_vs_torch.py"

if [ "$UPDATE_DOCS" = 1 ] && [ -f "$OUT/results.md" ]; then
  step "docs/performance.md"
  python3 "$ROOT/bench/device/update_performance_doc.py" "$ROOT/docs/performance.md" "$OUT/results.md" || status=1
  cp "$ROOT/docs/performance.md" "$OUT/performance.md"
fi

step "done: status $status"
exit $status
