#!/usr/bin/env bash
# Run on the development machine before the one device call of bench/device/run.sh: copies what the
# device image lacks into build-device-carry/, an ignored folder that the call carries
# (carry=["build-device-carry"]): GoogleTest's sources (googletest/), fmt's headers
# (fmt/include/fmt, for the runtime: -DAMP_FMT_INCLUDE_DIR) and nccl.h (nccl/include, used by
# bench/device/nccl_world1.sh only when the device has none of its own).
#   bench/device/prepare.sh [googletest sources] ; AMP_FMT_HEADERS, AMP_NCCL_HEADER override the others
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SRC=${1:-/usr/src/googletest}
FMT=${AMP_FMT_HEADERS:-/usr/include/fmt}
NCCL_H=${AMP_NCCL_HEADER:-}
if [ -z "$NCCL_H" ]; then
  for candidate in /usr/local/cuda/include/nccl.h /usr/include/nccl.h /usr/local/include/nccl.h; do
    [ -z "$NCCL_H" ] && [ -f "$candidate" ] && NCCL_H=$candidate
  done
fi
[ -f "$SRC/CMakeLists.txt" ] || { echo "prepare.sh: no GoogleTest sources at $SRC"; exit 1; }
[ -f "$FMT/format.h" ] || { echo "prepare.sh: no fmt headers at $FMT (Debian: libfmt-dev)"; exit 1; }
rm -rf "$ROOT/build-device-carry"
mkdir -p "$ROOT/build-device-carry/fmt/include"
cp -r "$SRC" "$ROOT/build-device-carry/googletest"
cp -rL "$FMT" "$ROOT/build-device-carry/fmt/include/fmt"
if [ -n "$NCCL_H" ]; then
  mkdir -p "$ROOT/build-device-carry/nccl/include"
  cp -L "$NCCL_H" "$ROOT/build-device-carry/nccl/include/nccl.h"
  echo "prepare.sh: nccl.h from $NCCL_H"
else
  echo "prepare.sh: no nccl.h here; the NCCL check will need the device's own"
fi
echo "prepare.sh: $(du -sh "$ROOT/build-device-carry" | cut -f1) in build-device-carry/; now call"
echo '  run(command="OUT=$OUT bench/device/run.sh", carry=["build-device-carry"], timeout_s=600)'
