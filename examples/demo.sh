#!/usr/bin/env bash
# The end-to-end demo: amp-migrate on examples/train_mlp (findings, then the diff), the migrated
# program built against the installed runtime, both programs run, both loss curves side by side.
# AMP_DEMO_LEVEL (default O2) picks the level. Without a built amp-migrate the expected output in
# examples/expected/ stands in for the tool's (and the demo says so).
set -euo pipefail
cd "$(dirname "$0")/.."
level=${AMP_DEMO_LEVEL:-O2}
jobs=${AMP_JOBS:-2}

scripts/setup.sh
# Only what the demo needs: the tool (when LLVM is there), the runtime and its CUDA backend (when
# nvcc is there), the binding. The tests build under scripts/test.sh.
AMP_CONFIGURE_ONLY=1 source scripts/configure.sh
targets=(amp_runtime)
configured=$(ninja -C build -t targets all 2>/dev/null)
for t in amp-migrate amp_runtime_cuda amp_torch; do
  if grep -q "^$t: " <<<"$configured"; then targets+=("$t"); fi
done
cmake --build build -j"$jobs" --target "${targets[@]}"

work=$(mktemp -d /tmp/amp-demo.XXXXXX)
prefix=$work/prefix
cmake --install build --prefix "$prefix" --component amp_runtime >/dev/null
cp -r examples/train_mlp "$work/before"
cp -r examples/train_mlp "$work/after"
rm -rf "$work/before/build" "$work/after/build"

echo "== building the original program (in the background, while the tool runs)"
cmake -S "$work/before" -B "$work/before/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/before/build" -j"$jobs" >"$work/before-build.log" 2>&1 &
before_build=$!

tool=build/tools/amp-migrate/amp-migrate
src=$work/after/train_mlp.cpp
if [[ -x $tool ]]; then
  # The compile flags of the original build (include dirs, defines) for the tool's parser.
  mapfile -t flags < <(python3 - "$work/before/build/compile_commands.json" <<'PY'
import json, shlex, sys
cmd = shlex.split(json.load(open(sys.argv[1]))[0]["command"])
keep, i = [], 0
while i < len(cmd):
    a = cmd[i]
    if a in ("-isystem", "-I", "-D") and i + 1 < len(cmd):
        keep += [a, cmd[i + 1]]; i += 2; continue
    if a.startswith(("-I", "-D", "-std=")):
        keep.append(a)
    i += 1
print("\n".join(keep))
PY
)
  # One run (parsing <torch/torch.h> is most of its time): --fix reports the findings as it fixes.
  echo "== amp-migrate --fix: findings"
  "$tool" --fix --level="$level" "$src" -- "${flags[@]}"
  echo "== amp-migrate --fix: the diff"
  diff -u --label original/train_mlp.cpp --label migrated/train_mlp.cpp \
       examples/train_mlp/train_mlp.cpp "$src" || true
else
  echo "== amp-migrate is not built here (needs LLVM 19); using examples/expected/train_mlp.O2.cpp"
  [[ $level == O2 ]] || { echo "only the O2 expected output exists" >&2; exit 1; }
  diff -u examples/train_mlp/train_mlp.cpp examples/expected/train_mlp.O2.cpp || true
  cp examples/expected/train_mlp.O2.cpp "$src"
fi

echo "== building the migrated program against the installed runtime ($prefix)"
cmake -S "$work/after" -B "$work/after/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/after/build" -j"$jobs" >/dev/null
wait "$before_build" || { cat "$work/before-build.log" >&2; exit 1; }

echo "== running both"
"$work/before/build/train_mlp" >"$work/before.log"
LD_LIBRARY_PATH="$prefix/lib:${LD_LIBRARY_PATH:-}" "$work/after/build/train_mlp" >"$work/after.log"
printf '%5s  %12s  %12s\n' step original "migrated $level"
paste <(awk '/^step/ {print $2, $4}' "$work/before.log") \
      <(awk '/^step/ {print $4}' "$work/after.log") |
  awk '{printf "%5d  %12.5f  %12.5f\n", $1, $2, $3}'
echo "(work directory: $work)"
