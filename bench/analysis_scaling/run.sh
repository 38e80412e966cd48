#!/usr/bin/env bash
# The engine's analysis time against the size of one construct (chains of operator calls, nested
# lambdas, deep template instantiation), side by side with `clang++-19 -fsyntax-only` on the same
# file: the tool's time per unit of the construct must stay constant (linear analysis; issue #38).
# Usage: bench/analysis_scaling/run.sh [build-dir] [sizes...]   (prints a Markdown table)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
shift || true
sizes=("$@")
((${#sizes[@]})) || sizes=(10 100 1000 10000)
tool=$build/tools/amp-migrate/amp-migrate
gen=$root/bench/analysis_scaling/gen_chain.py
mock=$root/test/Inputs/mock-torch
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

best_of_3() { # best_of_3 cmd...: the smallest wall time of three runs, in seconds
  local best=
  for _ in 1 2 3; do
    local s e
    s=$(date +%s.%N)
    "$@" >/dev/null 2>&1 || true
    e=$(date +%s.%N)
    best=$(python3 -c "b='$best'; t=$e-$s; print(t if not b else min(float(b), t))")
  done
  printf '%.3f' "$best"
}

echo "| shape | size | amp-migrate (s) | clang++ -fsyntax-only (s) | ratio | tool ms per unit above size ${sizes[0]} |"
echo "|---|---:|---:|---:|---:|---:|"
for shape in plus shift call lambda template; do
  base=
  for n in "${sizes[@]}"; do
    # Lambdas nested 10,000 deep and templates instantiated 10,000 deep are past what real code
    # does (and past clang's default limits); the nesting shapes stop at 2,000.
    if [[ $shape == lambda || $shape == template ]] && ((n > 2000)); then n=2000; fi
    f=$work/$shape$n.cpp
    python3 "$gen" "$shape" "$n" > "$f"
    flags=(-std=c++17 -I"$mock" -ftemplate-depth=$((n + 64)) -fbracket-depth=$((n + 256)))
    t=$(best_of_3 "$tool" "$f" -- "${flags[@]}")
    c=$(best_of_3 clang++-19 -fsyntax-only "${flags[@]}" "$f")
    if [[ -z $base ]]; then base=$t; base_n=$n; per=-; else
      per=$(python3 -c "print('%.3f' % (1000 * ($t - $base) / ($n - $base_n)))"); fi
    ratio=$(python3 -c "print('%.2f' % ($t / $c))")
    echo "| $shape | $n | $t | $c | $ratio | $per |"
  done
done
