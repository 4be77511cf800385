#!/usr/bin/env bash
# docs/configuration.md is what `cairnd --print-config-docs` prints: a key,
# default or description changed in the registry without regenerating the
# page fails here, with the difference.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
doc="$here/../../docs/configuration.md"
if ! "$CAIRND" --print-config-docs | diff -u "$doc" -; then
    echo "docs/configuration.md differs from 'cairnd --print-config-docs' (regenerate it: cairnd --print-config-docs > docs/configuration.md)" >&2
    exit 1
fi
