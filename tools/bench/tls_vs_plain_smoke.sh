#!/usr/bin/env bash
# Smoke test of tls_vs_plain.sh (ctest tools_tls_vs_plain_smoke): one round
# of 3000 records with the same cairnd given twice (--cairnd A --cairnd B,
# the side-by-side mode docs/benchmarks.md uses), and checks that every run
# wrote its report and the table has a row per binary and the B/A ratios.
# No timing bound.
#
# usage: tools/bench/tls_vs_plain_smoke.sh CAIRND CAIRN_BENCH
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cairnd="${1:?usage: tls_vs_plain_smoke.sh CAIRND CAIRN_BENCH}"
bench="${2:?}"
out="$(mktemp -d /tmp/cairn-tls-vs-plain-smoke-XXXXXX)"
trap 'rm -rf "$out"' EXIT

"$here/tls_vs_plain.sh" --rounds 1 --records 3000 --cairnd "$cairnd" --cairnd "$cairnd" --bench "$bench" \
    --out "$out/reports" >"$out/table.txt"
cat "$out/table.txt"
for kind in produce consume; do
    for proto in plaintext ssl; do
        for lab in A B; do
            f="$out/reports/$kind-$lab-$proto-1.json"
            python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["records"] == 3000, d' "$f" ||
                { echo "bad or missing report $f" >&2; exit 1; }
            grep -q "^$kind $proto $lab " "$out/table.txt" || { echo "no row for $kind $proto $lab" >&2; exit 1; }
        done
        grep -q "^$kind $proto B/A: " "$out/table.txt" || { echo "no B/A ratio for $kind $proto" >&2; exit 1; }
    done
done
echo "tls_vs_plain.sh side by side: all runs reported"
