#!/usr/bin/env bash
# Nested build and test against PyPI's libtorch:
#   run.sh <wheel>/torch <source dir> <build dir> [amp-migrate binary]
# Exit 77 (ctest: skipped) when that libtorch is not there.
set -euo pipefail
root=$1 src=$2 bin=$3 tool=${4:-}
if [[ -z $root ]]; then
  echo "SKIP: AMP_TORCH2_ROOT is not set and no wheel under /opt/amp-deps" \
       "(scripts/setup.sh extracts PyPI's torch wheel there)"
  exit 77
fi
if [[ ! -f $root/share/cmake/Torch/TorchConfig.cmake || ! -f $root/lib/libtorch_cpu.so ]]; then
  echo "SKIP: $root has no share/cmake/Torch/TorchConfig.cmake or lib/libtorch_cpu.so"
  exit 77
fi
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$src/test/e2e/torch2/project" -B "$bin" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DTorch_DIR="$root/share/cmake/Torch" -DAMP_SOURCE_DIR="$src" -DAMP_MIGRATE_EXECUTABLE="$tool" "${launcher[@]}" >/dev/null
cmake --build "$bin" -j"${AMP_JOBS:-2}"
ctest --test-dir "$bin" --output-on-failure
