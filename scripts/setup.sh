#!/usr/bin/env bash
# Installs what amp-migrate needs on Debian 12, if missing. Sourced or run by demo.sh and test.sh.
set -euo pipefail

need_pkgs=()
want() { dpkg -s "$1" >/dev/null 2>&1 || need_pkgs+=("$1"); }
for p in cmake ninja-build g++ ccache libclang-19-dev llvm-19-dev llvm-19-tools clang-19 \
         clang-tidy-19 libclang-cpp19-dev libtorch-dev libfmt-dev libgtest-dev libgmock-dev \
         libbenchmark-dev python3 python3-yaml libgloo-dev; do
  want "$p"
done
if ((${#need_pkgs[@]})); then
  if [[ $(id -u) -eq 0 ]]; then
    echo "setup: installing ${need_pkgs[*]}" >&2
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need_pkgs[@]}"
  else
    echo "setup: missing packages; run as root:" >&2
    echo "  apt-get update && apt-get install -y ${need_pkgs[*]}" >&2
    exit 1
  fi
fi

# Current libtorch (2.4+ autocast API) comes from PyPI's torch wheel; its C++ part is enough.
# Optional: when it cannot be had, the tests that need it skip and say so.
AMP_DEPS=${AMP_DEPS:-/opt/amp-deps}
AMP_TORCH_WHEEL_VERSION=${AMP_TORCH_WHEEL_VERSION:-2.11.0}
if [[ ! -f $AMP_DEPS/torch-$AMP_TORCH_WHEEL_VERSION/torch/share/cmake/Torch/TorchConfig.cmake && \
      ${AMP_SKIP_TORCH_WHEEL:-0} != 1 ]]; then
  mkdir -p "$AMP_DEPS"
  if python3 -m pip download --no-deps -q -d "$AMP_DEPS" "torch==$AMP_TORCH_WHEEL_VERSION" >&2; then
    whl=$(ls "$AMP_DEPS"/torch-"$AMP_TORCH_WHEEL_VERSION"-*.whl | head -n1)
    mkdir -p "$AMP_DEPS/torch-$AMP_TORCH_WHEEL_VERSION"
    python3 - "$whl" "$AMP_DEPS/torch-$AMP_TORCH_WHEEL_VERSION" <<'PY'
import sys, zipfile
whl, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(whl) as z:
    z.extractall(dest, [n for n in z.namelist()
                        if n.startswith(("torch/include/", "torch/lib/", "torch/share/"))])
PY
  else
    echo "setup: PyPI's torch wheel could not be downloaded; 2.4+ API tests will be skipped" >&2
  fi
fi
