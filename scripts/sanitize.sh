#!/usr/bin/env bash
# The sanitizer and fuzzing configuration (CI, after the test suite): a Debug + ASan/UBSan build
# with clang-19 of the AST-free core of the tool (rules, configuration, input limits, fix
# application, the compilation database loader, merging exported fixes, LSP framing) and of the
# runtime's CPU backend (and, where libtorch is found, of the libtorch binding for the scaler
# checkpoint harness; AMP_FUZZ_SCALER_STATE=0 leaves it out); runs their unit tests, then each
# libFuzzer harness of test/fuzz for a bounded time. The clang-AST half of
# the tool is not built with sanitizers here (it does not fit the CI budget on 2 cores;
# docs/reliability.md).
#   AMP_FUZZ_SECONDS  seconds per harness (default 10; the longer run is in docs/reliability.md)
#   AMP_FUZZ_MUTATE_RUNS  mutated inputs the mutation driver runs after its 6 seeds (default 12; needs build/'s tool)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${AMP_SANITIZE_BUILD:-build-sanitize}
seconds=${AMP_FUZZ_SECONDS:-10}
mutate_runs=${AMP_FUZZ_MUTATE_RUNS:-12}
tool=${AMP_MIGRATE:-$PWD/build/tools/amp-migrate/amp-migrate}

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
  -DAMP_SANITIZE=address,undefined -DAMP_BUILD_FUZZ=ON \
  -DAMP_ENABLE_CUDA=OFF -DAMP_BUILD_TORCH="$( [[ ${AMP_FUZZ_SCALER_STATE:-1} == 1 ]] && echo ON || echo OFF)" \
  -DAMP_BUILD_BENCH=OFF >/dev/null
targets=(amp-core-unit-tests runtime_core_tests fuzz-rules fuzz-config fuzz-lsp_framing fuzz-fix_digests
         fuzz-compile_db fuzz-merge_fixes fuzz-mutate)
# The scaler checkpoint harness needs the binding, which needs libtorch: only the binding and the
# harness are built of it here, not its tests (about a minute on 2 cores: docs/reliability.md).
have_scaler_state=0
if ninja -C "$build" -t targets all 2>/dev/null | grep -q '^fuzz-scaler_state:'; then
  targets+=(fuzz-scaler_state)
  have_scaler_state=1
fi
cmake --build "$build" -j"${AMP_JOBS:-2}" --target "${targets[@]}"

export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
"$build/test/unit/amp-core-unit-tests" --gtest_brief=1
# The runtime's tests without the large cases (the *_Many shapes and the 2^31-element tensor):
# under ASan those take minutes, and the small shapes reach the same code.
"$build/test/runtime/runtime_core_tests" --gtest_brief=1 --gtest_filter='-*Many:LargeTensor.*'


# Bounded fuzzing from the checked-in seeds; a crash leaves crash-* in $build/fuzz-out.
out="$build/fuzz-out"
rm -rf "$out" && mkdir -p "$out"
fuzz() { # harness, seed dirs..., libFuzzer options...
  local harness=$1; shift
  local seeds=()
  while [[ $# -gt 0 && $1 != -* ]]; do seeds+=("$1"); shift; done
  local corpus="$out/$harness"
  mkdir -p "$corpus"
  "$build/test/fuzz/fuzz-$harness" -artifact_prefix="$out/" -timeout=20 -rss_limit_mb=2048 \
    "$@" "$corpus" "${seeds[@]}" 2>"$out/$harness.log" ||
    { tail -40 "$out/$harness.log"; echo "fuzz-$harness failed (log: $out/$harness.log)"; exit 1; }
  echo "fuzz-$harness: $(grep -a -o 'Done [0-9]* runs' "$out/$harness.log" || echo done)"
}
# The harnesses run side by side, AMP_JOBS (default 2) at a time: each is bounded by its time or
# run count, so two cores finish them in about half the time.
running=0 failed=0
spawn() { # like fuzz, in the background
  if ((running >= ${AMP_JOBS:-2})); then
    wait -n || failed=1
    running=$((running - 1))
  fi
  fuzz "$@" &
  running=$((running + 1))
}
spawn rules rewrite-rules test/cli/Inputs test/checks/Inputs -max_total_time="$seconds"
spawn config test/fuzz/seeds/config test/driver/Inputs/configured -max_total_time="$seconds"
spawn lsp_framing test/fuzz/seeds/lsp_framing -max_total_time="$seconds"
spawn fix_digests test/fuzz/seeds/fix_digests -max_total_time="$seconds"
spawn compile_db test/fuzz/seeds/compile_db -max_total_time="$seconds"
spawn merge_fixes test/fuzz/seeds/merge_fixes -max_total_time="$seconds"
# The checkpoint loader allocates nothing near the limit for a file of at most 1 MiB: a large
# allocation is a finding (libtorch's unpickler reserved 4 GiB for a damaged string length).
if [[ $have_scaler_state == 1 ]]; then
  # libtorch's zip reader leaks when it refuses an archive: test/fuzz/libtorch.lsan.supp (the
  # background job takes the variable with it).
  LSAN_OPTIONS=suppressions=$PWD/test/fuzz/libtorch.lsan.supp \
    spawn scaler_state test/torch/data -max_total_time="$seconds" -malloc_limit_mb=256
else
  echo "fuzz-scaler_state: skipped (no libtorch, or AMP_FUZZ_SCALER_STATE=0)"
fi
if [[ -x $tool ]]; then
  # libFuzzer runs every seed before it mutates, and -runs counts those runs too: with all of
  # test/checks as seeds (121 inputs, over two minutes of the sanitized tool) -runs=12 ended before
  # any mutation. A few seeds (the lit tests run every check input under the sanitizers already),
  # then AMP_FUZZ_MUTATE_RUNS mutated inputs.
  mutate_seeds=(amp-autocast-scope amp-scaler-implicit-grad amp-autocast-inference amp-zero-grad
                wild-loss-struct-field wild-fp32-forward-scaler)
  mkdir -p "$out/mutate-seeds"
  for s in "${mutate_seeds[@]}"; do cp "test/checks/$s.cpp" "$out/mutate-seeds/"; done
  AMP_MIGRATE=$tool spawn mutate "$out/mutate-seeds" -runs="$((${#mutate_seeds[@]} + mutate_runs))" -max_len=16384
else
  echo "fuzz-mutate: skipped (no $tool; build the tool first)"
fi
while ((running > 0)); do
  wait -n || failed=1
  running=$((running - 1))
done
if ((failed)); then
  echo "sanitize: a fuzz harness failed (above; crashes in $out)"
  exit 1
fi
