#!/usr/bin/env bash
# Smoke test of tls_storm.sh (ctest tools_tls_storm_smoke): every
# `tools/bench/tls_storm.sh ...` command line of docs/benchmarks.md whose
# values are all given is taken by the script's option parsing, then the
# script runs with phases of 2 s at 500 records/s and 2 storm threads and
# --check (every record delivered, connections completed, none failed; no
# timing bound).
#
# usage: tools/bench/tls_storm_smoke.sh CAIRND CAIRN_BENCH CAIRN_TLS_STORM
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cairnd="${1:?usage: tls_storm_smoke.sh CAIRND CAIRN_BENCH CAIRN_TLS_STORM}"
bench="${2:?}"
storm="${3:?}"

documented=0
while IFS= read -r line; do
    read -r -a args <<<"$line"
    "$here/tls_storm.sh" "${args[@]}" --parse-only >/dev/null
    documented=$((documented + 1))
done < <(python3 - "$repo/docs/benchmarks.md" <<'PY'
import re, sys
md = re.sub(r"\s*\n\s*", " ", open(sys.argv[1]).read())
for span in re.findall(r"`tools/bench/tls_storm\.sh([^`]*)`", md):
    if "[" not in span:  # the usage summary has placeholders
        print(span.strip())
PY
)
[ "$documented" -ge 1 ] || { echo "no tls_storm.sh command found in docs/benchmarks.md" >&2; exit 1; }
echo "$documented documented tls_storm.sh command line(s) taken"

"$here/tls_storm.sh" --seconds 2 --rate 500 --threads 2 --cairnd "$cairnd" --bench "$bench" --storm "$storm" --check
