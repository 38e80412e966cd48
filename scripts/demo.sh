#!/usr/bin/env bash
# The main job on the bundled example (examples/train_mlp): sets up what is missing, builds,
# shows amp-migrate's findings and diff, builds the migrated program against the installed runtime,
# runs both and prints their loss curves side by side. AMP_DEMO_LEVEL=O1|O2|O3 (default O2).
set -euo pipefail
cd "$(dirname "$0")/.."
exec examples/demo.sh "$@"
