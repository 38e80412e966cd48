#!/usr/bin/env bash
# One call on a lent GPU machine (H200): build the runtime for sm_90, run its CUDA tests, and time its
# ops against PyTorch on the same tensors. Results go to $OUT (results.md, results.json, run.log,
# ctest-junit.xml) and into the "Runtime (CUDA, H200)" block of docs/performance.md, whose updated
# copy is also left in $OUT/performance.md (the device machine works on a copy of the tree).
# Budget: about 2 min build on 16 cores, 1 min tests, 3-4 min timings.
#
#   OUT=/some/dir bench/device/run.sh [--quick] [--no-docs]
#
# Needs: cmake >= 3.20, nvcc (CUDA >= 12.1: 32 KB kernel arguments), a C++17 compiler, python3 with
# torch (CUDA). GoogleTest is used if installed, else from AMP_GTEST_SOURCE_DIR (a googletest tree,
# e.g. a copy of /usr/src/googletest carried to the machine); without either the gtests are skipped
# and the Python checks against PyTorch still run.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${OUT:-$ROOT/device-out}
BUILD=${BUILD:-/tmp/amp-runtime-device-build}
QUICK=""
UPDATE_DOCS=1
for arg in "$@"; do
  case $arg in
    --quick) QUICK="--quick" ;;
    --no-docs) UPDATE_DOCS=0 ;;
  esac
done
mkdir -p "$OUT"
exec > >(tee "$OUT/run.log") 2>&1
status=0
step() { echo; echo "==== $* ($(date -u +%H:%M:%S))"; }

step "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv || true
nvcc --version | tail -2 || true
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))' || true
nproc

step "configure (sm_90, Release)"
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
GTEST_SRC=${AMP_GTEST_SOURCE_DIR:-}
[ -z "$GTEST_SRC" ] && [ -d "$ROOT/shared/googletest" ] && GTEST_SRC="$ROOT/shared/googletest"
[ -z "$GTEST_SRC" ] && [ -d /usr/src/googletest ] && GTEST_SRC=/usr/src/googletest
cmake -S "$ROOT/bench/device" -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DAMP_GTEST_SOURCE_DIR="$GTEST_SRC" || exit 1

step "build"
cmake --build "$BUILD" -j "$(nproc)" || exit 1

step "CUDA and CPU tests (ctest -R runtime)"
if [ -x "$BUILD/test/runtime/runtime_cuda_tests" ]; then
  ctest --test-dir "$BUILD" -R runtime -j 8 --output-on-failure \
    --output-junit "$OUT/ctest-junit.xml" || status=1
  "$BUILD/test/runtime/runtime_cuda_tests" --gtest_brief=1 > "$OUT/cuda-gtest.txt" 2>&1 || status=1
  tail -3 "$OUT/cuda-gtest.txt"
  grep -q "SKIPPED" "$OUT/cuda-gtest.txt" && { echo "CUDA tests were SKIPPED: no GPU visible?"; status=1; }
else
  echo "GoogleTest not available: gtests not built (the Python checks below still compare with PyTorch)"
fi

step "timings vs PyTorch"
CAPI=$(find "$BUILD" -name 'libamp_runtime_capi.so' | head -1)
python3 "$ROOT/bench/device/bench_vs_torch.py" --capi "$CAPI" --out "$OUT" $QUICK || status=1

if [ "$UPDATE_DOCS" = 1 ] && [ -f "$OUT/results.md" ]; then
  step "docs/performance.md"
  python3 "$ROOT/bench/device/update_performance_doc.py" "$ROOT/docs/performance.md" "$OUT/results.md" || status=1
  cp "$ROOT/docs/performance.md" "$OUT/performance.md"
fi

step "done: status $status"
exit $status
