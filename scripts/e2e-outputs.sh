#!/usr/bin/env bash
# Runs amp-migrate --fix at O1 on every e2e program (test/e2e/programs with libtorch 1.13's headers,
# programs24 with torch 2.11's) as test/e2e/e2e.cmake does, and compares each result byte for byte
# with its expected migration (migrated/, migrated24/). A refactor of the engine must keep them all
# identical. Usage: scripts/e2e-outputs.sh [build dir | amp-migrate binary] (default build);
# AMP_JOBS=N runs N at once (default 2). Exit 1 on any difference.
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
tool=${1:-build}
[[ -d $tool ]] && tool=$tool/tools/amp-migrate/amp-migrate
tool=$(realpath "$tool")
torch2=${AMP_TORCH2_ROOT:-/opt/amp-deps/torch-2.11.0/torch}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# One line per program: <program> <expected> <flags...>
{
  for p in "$src"/test/e2e/programs/*.cpp; do
    name=$(basename "$p" .cpp)
    [[ -f $src/test/e2e/migrated/$name.cpp ]] || continue
    flags="-I$src/test/e2e/programs -isystem /usr/include/torch/csrc/api/include"
    [[ $name == distributed_allreduce ]] && flags+=" -DUSE_C10D_GLOO -DUSE_DISTRIBUTED"
    echo "$p $src/test/e2e/migrated/$name.cpp $flags"
  done
  if [[ -d $torch2/include ]]; then
    for p in "$src"/test/e2e/programs24/*.cpp; do
      name=$(basename "$p" .cpp)
      echo "$p $src/test/e2e/migrated24/$name.cpp -I$src/test/e2e/programs24 -I$src/test/e2e/programs" \
           "-isystem $torch2/include -isystem $torch2/include/torch/csrc/api/include"
    done
  fi
} > "$work/jobs"
run_one() { # <tool> <work dir> <program> <expected> <flags...>
  local tool=$1 dir=$2 prog=$3 expected=$4; shift 4
  local out
  out=$dir/$(basename "$(dirname "$prog")")_$(basename "$prog")
  cp "$prog" "$out"
  local files=("$out")
  if [[ -f ${prog%.cpp}.model.cpp ]]; then # a program's second translation unit, in the same run
    cp "${prog%.cpp}.model.cpp" "${out%.cpp}.model.cpp"
    files+=("${out%.cpp}.model.cpp")
  fi
  "$tool" --fix --level=O1 "${files[@]}" -- -std=c++17 "$@" >/dev/null 2>&1
  if cmp -s "$out" "$expected"; then echo "same: $prog"; else echo "DIFFERS: $prog"; fi
}
export -f run_one
xargs -P "${AMP_JOBS:-2}" -L 1 bash -c 'run_one "$@"' _ "$tool" "$work" < "$work/jobs" > "$work/results"
sort "$work/results" | grep DIFFERS
n=$(wc -l < "$work/results") differ=$(grep -c DIFFERS "$work/results")
echo "$n programs, $((n - differ)) identical, $differ differ"
[[ $differ == 0 ]]
