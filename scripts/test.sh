#!/usr/bin/env bash
# Sets up what is missing, builds into build/, and runs every test (ctest).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
source scripts/configure.sh
ctest --test-dir build --output-on-failure -j"${AMP_JOBS:-2}" "$@"
# ASan/UBSan build of the AST-free core and the runtime, and bounded fuzzing (docs/reliability.md).
if [[ ${AMP_SKIP_SANITIZE:-0} != 1 && $# -eq 0 ]]; then
  scripts/sanitize.sh
fi
