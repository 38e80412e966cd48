#!/usr/bin/env bash
# `amp-migrate --fix` over many files of one run, side by side in one run: the preamble shared by
# the files' common first include lines and the check before a fix against a full preamble of
# them (the default) vs AMP_MIGRATE_SHARED_PREFIX=off (a preamble shared only by identical include
# blocks, a whole parse before each fix: the behaviour before). The files are the e2e
# before-programs (real libtorch 1.13 headers), which start with the same two includes and differ
# after them. Both runs must produce the same files.
# Usage: bench/fix_codebase.sh [build-dir] [jobs]   (prints a Markdown table; numbers from this run only)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
jobs=${2:-2}
tool=$build/tools/amp-migrate/amp-migrate
if grep -qE '^AMP_SANITIZE_TOOL:STRING=.+' "$build/CMakeCache.txt" 2>/dev/null; then
  echo "fix_codebase.sh: $build builds the tool with sanitizers (AMP_SANITIZE_TOOL); use a build without them" >&2
  exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
programs=$(ls "$root/test/e2e/programs/"*.cpp | grep -v distributed_allreduce)
flags=(-std=c++17 -I"$root/test/e2e/programs" -isystem /usr/include/torch/csrc/api/include)

run() { # run <label> <env...>: copies the programs, fixes them in one run, prints the row
  local label=$1 dir=$work/$1
  shift
  mkdir -p "$dir"
  cp $programs "$dir/"
  /usr/bin/time -f '%e %U %M' -o "$work/$label.time" env "$@" "$tool" --fix --level=O1 -j"$jobs" "$dir"/*.cpp -- \
    "${flags[@]}" >/dev/null 2>"$work/$label.err" || { echo "fix_codebase.sh: the $label run failed" >&2; tail "$work/$label.err" >&2; exit 1; }
  read -r wall user kb < "$work/$label.time"
  echo "$wall $user $kb"
}

n=$(echo "$programs" | wc -l)
base=$(run unshared AMP_MIGRATE_SHARED_PREFIX=off)
new=$(run shared AMP_MIGRATE_SHARED_PREFIX=on)
same=yes
diff -r "$work/unshared" "$work/shared" >/dev/null || same=NO
read -r bw bu bk <<<"$base"
read -r nw nu nk <<<"$new"
echo "| \`amp-migrate --fix -j$jobs\` over $n e2e programs | wall s | user s | peak MB |"
echo "|---|---|---|---|"
echo "| AMP_MIGRATE_SHARED_PREFIX=off (before) | $bw | $bu | $((bk / 1024)) |"
echo "| shared first include lines (default) | $nw | $nu | $((nk / 1024)) |"
echo "| ratio (default / before) | $(python3 -c "print(round($nw/$bw, 2))") | $(python3 -c "print(round($nu/$bu, 2))") | $(python3 -c "print(round($nk/$bk, 2))") |"
echo
echo "Same rewritten files: $same"
[[ $same == yes ]]
