#!/usr/bin/env bash
# CMake's compiler launcher of the e2e programs (test/e2e/e2e.cmake): run as
#   clang-pch-launcher.sh <clang++> <configured C++ compiler> <arguments...>
# it compiles with <clang++> instead, under ccache when AMP_E2E_CCACHE names it. The programs are
# small and libtorch's templates are most of their compile time: clang's precompiled header can
# hold the instantiations of the header's own templates (-fpch-instantiate-templates), which g++'s
# cannot, and a program compiled against it takes less than half the time. Objects from either
# compiler link together (both use libstdc++).
set -euo pipefail
clangxx=$1
shift 2
# libtorch's targets define GFLAGS_IS_A_DLL, which gflags' header defines again; CMake's PCH
# source includes the header set with #pragma GCC system_header: g++ says nothing of either.
extra=(-Wno-macro-redefined -Wno-pragma-system-header-outside-header)
for a in "$@"; do
  if [[ $a == c++-header ]]; then
    extra+=(-Xclang -fpch-instantiate-templates)
    break
  fi
done
if [[ -n ${AMP_E2E_CCACHE:-} ]]; then
  CCACHE_SLOPPINESS=pch_defines,time_macros exec "$AMP_E2E_CCACHE" "$clangxx" "${extra[@]}" "$@"
fi
exec "$clangxx" "${extra[@]}" "$@"
