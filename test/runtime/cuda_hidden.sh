#!/usr/bin/env bash
# Installs the runtime's libraries into a scratch prefix and checks that nothing needs CUDA at load
# time: `readelf -d` of the core and of each given program lists no CUDA library, and the programs
# run with the CUDA libraries hidden from the loader (empty LD_LIBRARY_PATH, no ld.so.cache).
#   cuda_hidden.sh <build dir> <program> [its arguments...]
set -euo pipefail
build=$1 program=$2
shift 2
work=$(mktemp -d "${TMPDIR:-/tmp}/amp-cuda-hidden.XXXXXX")
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work" --component amp_runtime >/dev/null
lib=$(find "$work" -name 'libamp_runtime.so*' -type f -printf '%h\n' | head -n1)
[[ -n $lib ]] || { echo "FAIL: no libamp_runtime.so installed under $work"; exit 1; }

cuda_needed() { readelf -d "$1" | grep -E 'NEEDED.*(libcuda|libcudart|libcublas|libnv)' || true; }
fmt_needed() { readelf -d "$1" | grep -E 'NEEDED.*libfmt' || true; }
status=0
# libamp_torch too when it is shared (by default it is a static archive, inside the program).
for f in "$lib"/libamp_runtime.so.*.* "$lib"/libamp_torch.so* "$program"; do
  [[ -f $f ]] || continue
  found=$(cuda_needed "$f")
  if [[ -n $found ]]; then
    echo "FAIL: $f needs CUDA at load time:"; echo "$found"; status=1
  else
    echo "ok: readelf -d $(basename "$f") lists no CUDA library"
  fi
  # fmt builds the runtime's messages header-only: no libfmt.so for migrated programs either.
  found=$(fmt_needed "$f")
  if [[ -n $found ]]; then
    echo "FAIL: $f needs libfmt at load time:"; echo "$found"; status=1
  fi
done
for f in "$lib"/libamp_runtime_cuda.so.*.*; do
  if [[ -f $f && -n $(fmt_needed "$f") ]]; then
    echo "FAIL: $f needs libfmt at load time"; status=1
  fi
done
# The grep above can fail: the backend itself does list the CUDA runtime.
backend=$(find "$lib" -name 'libamp_runtime_cuda.so.*.*' -type f | head -n1)
if [[ -n $backend && -z $(cuda_needed "$backend") ]]; then
  echo "FAIL: $backend lists no CUDA library: the readelf check is broken"; status=1
fi

# Hidden: the dynamic loader itself, told to ignore ld.so.cache, with only the scratch lib folder
# and the system's default folders. The installed libraries carry no RUNPATH to CUDA.
for d in /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib64 /usr/lib64 /lib /usr/lib; do
  if compgen -G "$d/libcudart.so.*" >/dev/null; then
    echo "SKIP (after the readelf checks): $d, a default folder of the loader, has libcudart"
    [[ $status == 0 ]] && exit 77
    exit $status
  fi
done
# A libtorch built with CUDA (PyPI's wheel) needs CUDA libraries of its own (libcupti, libcudart):
# hiding them would test libtorch, not the runtime.
cuda_libs='lib(cuda|cudart|cupti|cublas|cublasLt|cudnn|nvrtc|nccl|cufft|curand|cusparse|cusolver'
cuda_libs+='|nvJitLink|nvToolsExt)[^ ]*'
theirs=$(ldd "$program" | grep -v 'libamp_' | grep -oE "$cuda_libs" | sort -u | tr '\n' ' ' || true)
if [[ -n $theirs ]]; then
  echo "SKIP (after the readelf checks): $(basename "$program")'s other libraries need CUDA:" \
       "$theirs"
  [[ $status == 0 ]] && exit 77
  exit $status
fi
interp=$(readelf -l "$program" | sed -n 's/.*interpreter: \(.*\)\]/\1/p')
hidden=(env LD_LIBRARY_PATH= AMP_TEST_CUDA_HIDDEN=1 "$interp" --inhibit-cache --library-path "$lib")
echo "== $(basename "$program") $* with the CUDA libraries hidden"
"${hidden[@]}" "$program" "$@" || status=1
exit $status
