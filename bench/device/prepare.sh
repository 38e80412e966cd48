#!/usr/bin/env bash
# Run on the development machine before the one device call of bench/device/run.sh: copies what the
# device image lacks (GoogleTest's sources) into build-device-carry/, an ignored folder that the
# call carries (carry=["build-device-carry"]).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SRC=${1:-/usr/src/googletest}
[ -f "$SRC/CMakeLists.txt" ] || { echo "prepare.sh: no GoogleTest sources at $SRC"; exit 1; }
rm -rf "$ROOT/build-device-carry"
mkdir -p "$ROOT/build-device-carry"
cp -r "$SRC" "$ROOT/build-device-carry/googletest"
echo "prepare.sh: $(du -sh "$ROOT/build-device-carry" | cut -f1) in build-device-carry/; now call"
echo '  run(command="OUT=$OUT bench/device/run.sh", carry=["build-device-carry"], timeout_s=600)'
