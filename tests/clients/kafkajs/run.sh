#!/usr/bin/env bash
# ctest entry for the kafkajs tests: skips (77) when node or the pinned
# kafkajs (npm ci in this folder, or `make client-deps`) is missing.
# usage: tests/clients/kafkajs/run.sh CAIRND [basic|group]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if ! command -v node >/dev/null 2>&1; then
    echo "node is not installed (make client-deps): SKIPPED"
    exit 77
fi
if [ ! -f "$here/node_modules/kafkajs/package.json" ]; then
    echo "kafkajs is not installed in $here (make client-deps): SKIPPED"
    exit 77
fi
cd "$here"
exec ../run_with_cairnd.sh "$1" -- node compat.js '{bootstrap}' "${2:-basic}"
