#!/usr/bin/env bash
# ctest entry for the kafkajs tests on secured listeners (secure.js): skips
# (77) when node or the pinned kafkajs is missing.
# usage: tests/clients/kafkajs/run_secure.sh CAIRND CAIRN PLUGIN_DIR ssl|mtls|sasl_plaintext|sasl_ssl|oauthbearer
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
exec ../run_with_secure_cairnd.sh "$1" "$2" "$3" -- node secure.js "$4"
