#!/usr/bin/env bash
# Produce and consume throughput over SSL against PLAINTEXT, side by side on
# one broker: cairnd serves a PLAINTEXT and an SSL listener at once, and each
# round runs `cairn-bench produce` then `cairn-bench consume` of N records of
# 1 KiB over each listener in turn (the order alternates every round), each
# on its own topic, with --broker-pid for the broker CPU per record. The
# medians per protocol are printed at the end. Certificates are made with
# tests/integration/tls/make_certs.sh.
#
# usage: tools/bench/tls_vs_plain.sh [--rounds R] [--records N] [--cairnd PATH]
#            [--bench PATH] [--out DIR]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
rounds=3
records=300000
cairnd="$repo/build/core/server/cairnd"
bench="$repo/build/tools/bench/cairn-bench"
out=""
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds="$2"; shift ;;
        --records) records="$2"; shift ;;
        --cairnd) cairnd="$2"; shift ;;
        --bench) bench="$2"; shift ;;
        --out) out="$2"; shift ;;
        -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
    shift
done

work="$(mktemp -d /tmp/cairn-tls-bench-XXXXXX)"
[ -n "$out" ] || out="$work/reports"
mkdir -p "$out" "$work/certs" "$work/data"
sh "$repo/tests/integration/tls/make_certs.sh" "$work/certs"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
plain_port=$(free_port)
ssl_port=$(free_port)
"$cairnd" --override "listeners=PLAINTEXT://127.0.0.1:$plain_port,SSL://127.0.0.1:$ssl_port" \
    --override "log.dirs=$work/data" --override "ssl.keystore.location=$work/certs/server.pem" \
    >"$work/cairnd.log" 2>&1 &
broker=$!
trap 'kill $broker 2>/dev/null; wait $broker 2>/dev/null; rm -rf "$work/data"' EXIT
for _ in $(seq 100); do
    grep -q "cairnd started" "$work/cairnd.log" && break
    sleep 0.1
done

ssl_opts=(-X security.protocol=ssl -X "ssl.ca.location=$work/certs/ca.pem")
run() { # round protocol
    local port opts=()
    if [ "$2" = ssl ]; then port=$ssl_port; opts=("${ssl_opts[@]}"); else port=$plain_port; fi
    "$bench" produce --bootstrap "127.0.0.1:$port" --topic "t-$2-$1" --records "$records" --record-size 1024 \
        --partitions 1 --broker-pid "$broker" "${opts[@]}" >"$out/produce-$2-$1.json"
    "$bench" consume --bootstrap "127.0.0.1:$port" --topic "t-$2-$1" --records "$records" \
        --broker-pid "$broker" "${opts[@]}" >"$out/consume-$2-$1.json"
}
for r in $(seq "$rounds"); do
    if [ $((r % 2)) -eq 1 ]; then run "$r" plaintext; run "$r" ssl; else run "$r" ssl; run "$r" plaintext; fi
done

python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
print(f"{'run':<20}{'MB/s':>10}{'msgs/s':>12}{'broker us/rec':>15}")
for kind in ("produce", "consume"):
    for proto in ("plaintext", "ssl"):
        reps = [json.load(open(f"{out}/{kind}-{proto}-{r}.json")) for r in range(1, rounds + 1)]
        mb = statistics.median(x["mb_per_sec"] for x in reps)
        msgs = statistics.median(x["msgs_per_sec"] for x in reps)
        cpu = statistics.median(x["broker_cpu"]["us_per_record"] for x in reps)
        print(f"{kind + ' ' + proto:<20}{mb:>10.1f}{msgs:>12.0f}{cpu:>15.2f}")
PY
echo "reports in $out"
