#!/usr/bin/env bash
# The main job on the bundled example: findings, the diff, then the original and the migrated
# program built (the migrated one against the installed runtime) and run, loss curves side by side.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
scripts/setup.sh
source scripts/configure.sh
cmake --install build --prefix build/install >/dev/null

# The example: examples/<name>/train.cpp with its headers beside it.
src=${AMP_DEMO_SOURCE:-}
if [[ -z $src ]]; then
  src=$(ls examples/*/train.cpp 2>/dev/null | head -n1 || true)
  [[ -z $src ]] && src=test/e2e/programs/clip_logged_norm.cpp
fi
srcdir=$(dirname "$src")
work=build/demo
rm -rf "$work" && mkdir -p "$work/before" "$work/after"
cp "$srcdir"/*.h "$srcdir"/*.hpp "$work/before/" 2>/dev/null || true
cp "$src" "$work/before/train.cpp"
cp -r "$work/before/." "$work/after/"

tool=build/tools/amp-migrate/amp-migrate
flags=(-std=c++17 -isystem /usr/include/torch/csrc/api/include)
level=${AMP_DEMO_LEVEL:-O1}

echo "== amp-migrate: findings in $src"
"$tool" --stats "$work/after/train.cpp" -- "${flags[@]}" || true
echo
echo "== amp-migrate --diff --level=$level"
(cd "$work/after" && "$root/$tool" --diff --level="$level" train.cpp -- "${flags[@]}" 2>/dev/null) || true
"$tool" --fix --level="$level" "$work/after/train.cpp" -- "${flags[@]}" >/dev/null

cat > "$work/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.20)
project(amp_demo CXX)
set(CMAKE_CXX_STANDARD 17)
find_package(Torch REQUIRED)
find_package(AmpRuntime REQUIRED)
add_executable(train_before before/train.cpp)
target_link_libraries(train_before PRIVATE ${TORCH_LIBRARIES})
add_executable(train_after after/train.cpp)
target_include_directories(train_after PRIVATE after)
target_link_libraries(train_after PRIVATE amp::torch ${TORCH_LIBRARIES})
CMAKE
echo
echo "== building both programs (the migrated one against build/install)"
cmake -S "$work" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$root/build/install" >/dev/null
cmake --build "$work/build" -j"${AMP_JOBS:-2}" >/dev/null
"$work/build/train_before" > "$work/before.log"
"$work/build/train_after" > "$work/after.log"
echo
echo "== loss per step: original (autocast + scaler) | migrated ($level, amp::value_and_grad)"
python3 - "$work/before.log" "$work/after.log" <<'PY'
import re, sys
def losses(path):
    return [float(m.group(1)) for m in re.finditer(r"loss ([-+0-9.eE]+)", open(path).read())]
a, b = losses(sys.argv[1]), losses(sys.argv[2])
print("%5s  %12s  %12s  %9s" % ("step", "original", "migrated", "rel.diff"))
for i, (x, y) in enumerate(zip(a, b)):
    print("%5d  %12.6f  %12.6f  %9.2e" % (i, x, y, abs(x - y) / max(abs(x), 1e-12)))
PY
