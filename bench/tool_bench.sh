#!/usr/bin/env bash
# Measures the migration tool side by side with the baselines, in one run:
#  (a) amp-migrate vs `clang++-19 -fsyntax-only` on a TU that includes the real <torch/torch.h>
#      (goals: time ratio <= 0.5, peak-memory ratio <= 0.7);
#  (b) a compile database of 20 libtorch TUs, 2 of which use AMP: amp-migrate -j2 vs
#      `clang-tidy-19 -p` with one comparable check on the same files (goal: >= 10x faster).
# Usage: bench/tool_bench.sh [build-dir]   (prints a Markdown table; numbers from this run only)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
tool=$build/tools/amp-migrate/amp-migrate
# A tool built with sanitizers (CI's build/: AMP_SANITIZE_TOOL) is not the tool users run.
if grep -qE '^AMP_SANITIZE_TOOL:STRING=.+' "$build/CMakeCache.txt" 2>/dev/null; then
  echo "tool_bench.sh: $build builds the tool with sanitizers (AMP_SANITIZE_TOOL); use a build without them" >&2
  exit 2
fi
torch_inc=/usr/include/torch/csrc/api/include
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

measure() { # measure <label> <cmd...>: prints "seconds peak_kb"
  local out=$work/time.$RANDOM
  /usr/bin/time -f '%e %M' -o "$out" "${@:2}" >/dev/null 2>&1 || true
  cat "$out"
}

cp "$root/test/e2e/programs/"*.h "$work/" 2>/dev/null || true
amp_src=$root/test/e2e/programs/scope_1x.cpp
cp "$amp_src" "$work/amp0.cpp"
cp "$amp_src" "$work/amp1.cpp"
for i in $(seq 0 17); do
  cat > "$work/plain$i.cpp" <<CPP
#include <torch/torch.h>
struct Net${i}Impl : torch::nn::Module {
  torch::nn::Linear fc{nullptr};
  Net${i}Impl() { fc = register_module("fc", torch::nn::Linear(8, 8)); }
  torch::Tensor forward(const torch::Tensor &x) { return torch::relu(fc->forward(x)) * $i; }
};
TORCH_MODULE(Net$i);
torch::Tensor run$i(const torch::Tensor &x) { Net$i net; return net(x).sum(); }
CPP
done
python3 - "$work" "$torch_inc" <<'PY'
import json, os, sys
work, inc = sys.argv[1], sys.argv[2]
files = sorted(f for f in os.listdir(work) if f.endswith(".cpp"))
json.dump([{"directory": work, "file": os.path.join(work, f),
            "arguments": ["clang++-19", "-std=c++17", "-isystem", inc, "-I", work, "-c", f]}
           for f in files], open(os.path.join(work, "compile_commands.json"), "w"), indent=1)
PY

echo "## Migration tool benchmark ($(date -u +%Y-%m-%d), $(nproc) cores, $(uname -m))"
echo
read -r t_cc m_cc < <(measure cc clang++-19 -fsyntax-only -std=c++17 -isystem "$torch_inc" -I "$work" "$work/amp0.cpp")
read -r t_tool m_tool < <(measure tool "$tool" -p "$work" "$work/amp0.cpp")
echo "| (a) one real-libtorch TU | seconds | peak MB |"
echo "|---|---|---|"
echo "| clang++-19 -fsyntax-only | $t_cc | $((m_cc / 1024)) |"
echo "| amp-migrate | $t_tool | $((m_tool / 1024)) |"
python3 -c "print('| ratio (tool / clang++) | %.2f | %.2f |' % ($t_tool / $t_cc, $m_tool / $m_cc))"
echo
files=("$work"/*.cpp)
read -r t_tidy m_tidy < <(measure tidy clang-tidy-19 -p "$work" -checks='-*,bugprone-use-after-move' "${files[@]}")
read -r t_tool2 m_tool2 < <(measure tool2 "$tool" -p "$work" -j2 "${files[@]}")
echo "| (b) 20 TUs, 2 with AMP | seconds | peak MB |"
echo "|---|---|---|"
echo "| clang-tidy-19 -p, one check | $t_tidy | $((m_tidy / 1024)) |"
echo "| amp-migrate -j2 | $t_tool2 | $((m_tool2 / 1024)) |"
python3 -c "print('| speed-up (clang-tidy / tool) | %.1fx | |' % ($t_tidy / $t_tool2))"
echo
"$tool" -p "$work" -j2 --stats "${files[@]}" 2>&1 >/dev/null | sed -n '/^files:/,$p' | sed 's/^/    /'
