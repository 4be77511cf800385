#!/usr/bin/env bash
# New TLS connections per second that one cairnd accepts while it serves a
# producer, and that producer's latency during the storm. One cairnd with an
# SSL listener (certificates from tests/integration/tls/make_certs.sh); each
# round runs three phases of S seconds on the same broker:
#   alone   `cairn-bench produce --rate R` over SSL, nothing else
#   storm   cairn-tls-storm alone (handshake, ApiVersions, close; T threads)
#   both    the storm, and the same producer started 0.5 s into it
# The producer uses one partition, 1 KiB records, acks=1, linger.ms=5,
# socket.nagle.disable=true (librdkafka 2.0.2 writes a request over TLS in
# several SSL_writes, and with Nagle on the client the later ones wait for
# the broker's delayed ACK: p50 17.8 ms instead of 3.5 at 2000 records/s),
# a fresh topic per phase. The order of `alone` and `both` alternates by
# round. With --check, exits non-zero unless every record was delivered and
# the storm completed connections without a failure (no timing bound);
# --parse-only stops after the options are checked.
#
# usage: tools/bench/tls_storm.sh [--seconds S] [--rate R] [--threads T] [--rounds N]
#            [--cairnd PATH] [--bench PATH] [--storm PATH] [--out DIR] [--check] [--parse-only]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
seconds=10
rate=2000
threads=4
rounds=1
cairnd="$repo/build/core/server/cairnd"
bench="$repo/build/tools/bench/cairn-bench"
storm="$repo/build/tools/bench/cairn-tls-storm"
out=""
check=0
parse_only=0
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) seconds="$2"; shift ;;
        --rate) rate="$2"; shift ;;
        --threads) threads="$2"; shift ;;
        --rounds) rounds="$2"; shift ;;
        --cairnd) cairnd="$2"; shift ;;
        --bench) bench="$2"; shift ;;
        --storm) storm="$2"; shift ;;
        --out) out="$2"; shift ;;
        --check) check=1 ;;
        --parse-only) parse_only=1 ;;
        -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
for n in "$seconds" "$rate" "$threads" "$rounds"; do
    case "$n" in ''|*[!0-9]*|0) echo "--seconds, --rate, --threads and --rounds want positive integers" >&2; exit 2 ;; esac
done
[ "$parse_only" = 1 ] && { echo "options taken"; exit 0; }

work="$(mktemp -d /tmp/cairn-tls-storm-XXXXXX)"
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
storm_pid=""
cleanup() {
    [ -n "$storm_pid" ] && kill "$storm_pid" 2>/dev/null
    kill "$broker" 2>/dev/null
    wait "$broker" 2>/dev/null
    rm -rf "$work/data"
}
trap cleanup EXIT
for _ in $(seq 300); do
    grep -q "cairnd started" "$work/cairnd.log" && break
    kill -0 "$broker" 2>/dev/null || { cat "$work/cairnd.log" >&2; exit 1; }
    sleep 0.1
done

records=$((rate * seconds))
produce() { # phase round
    "$bench" produce --bootstrap "127.0.0.1:$ssl_port" --topic "t-$1-$2" --records "$records" \
        --record-size 1024 --partitions 1 --rate "$rate" --broker-pid "$broker" \
        -X security.protocol=ssl -X "ssl.ca.location=$work/certs/ca.pem" -X socket.nagle.disable=true \
        >"$out/produce-$1-$2.json"
}
broker_ticks() { awk '{ print $14 + $15 }' "/proc/$broker/stat"; }
run_storm() { # phase round seconds
    local before
    before=$(broker_ticks)
    "$storm" --bootstrap "127.0.0.1:$ssl_port" --ca "$work/certs/ca.pem" --seconds "$3" \
        --threads "$threads" >"$out/storm-$1-$2.json"
    echo $(($(broker_ticks) - before)) >"$out/storm-ticks-$1-$2.txt"
}
both() { # round
    run_storm both "$1" $((seconds + 1)) &
    storm_pid=$!
    sleep 0.5 # the storm up to speed before the producer's first record
    produce both "$1"
    wait "$storm_pid"
    storm_pid=""
}
for r in $(seq "$rounds"); do
    if [ $((r % 2)) -eq 1 ]; then produce alone "$r"; both "$r"; else both "$r"; produce alone "$r"; fi
    run_storm storm "$r" "$seconds"
done

python3 - "$out" "$rounds" "$check" "$records" <<'PY'
import json, statistics, sys
out, rounds, check, records = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", int(sys.argv[4])
load = lambda name: [json.load(open(f"{out}/{name}-{r}.json")) for r in range(1, rounds + 1)]
med = lambda xs: statistics.median(xs)
alone, both = load("produce-alone"), load("produce-both")
storm_alone, storm_both = load("storm-storm"), load("storm-both")
print(f"{'phase (median of %d)' % rounds:<26}{'conn/s':>10}{'conn p50 ms':>13}{'conn p99 ms':>13}"
      f"{'prod p50 ms':>13}{'prod p99 ms':>13}{'broker us/rec':>15}")
def row(name, storm, prod):
    c = f"{med(s['connections_per_sec'] for s in storm):>10.0f}" if storm else f"{'-':>10}"
    cp50 = f"{med(s['connection_ms']['p50'] for s in storm):>13.2f}" if storm else f"{'-':>13}"
    cp99 = f"{med(s['connection_ms']['p99'] for s in storm):>13.2f}" if storm else f"{'-':>13}"
    p50 = f"{med(p['latency_ms']['p50'] for p in prod):>13.2f}" if prod else f"{'-':>13}"
    p99 = f"{med(p['latency_ms']['p99'] for p in prod):>13.2f}" if prod else f"{'-':>13}"
    cpu = f"{med(p['broker_cpu']['us_per_record'] for p in prod):>15.1f}" if prod else f"{'-':>15}"
    print(f"{name:<26}{c}{cp50}{cp99}{p50}{p99}{cpu}")
row("producer alone", None, alone)
row("storm alone", storm_alone, None)
row("storm + producer", storm_both, both)
# Broker CPU per connection while the storm ran alone (clock ticks of 10 ms).
ticks = [int(open(f"{out}/storm-ticks-storm-{r}.txt").read()) for r in range(1, rounds + 1)]
per_conn = [t * 10000 / s["connections"] for t, s in zip(ticks, storm_alone) if s["connections"]]
if per_conn:
    print(f"broker CPU per connection, storm alone: {med(per_conn):.0f} us (median of {len(per_conn)})")
if check:
    bad = []
    for p in alone + both:
        if p["records"] != records:
            bad.append(f"a producer delivered {p['records']} of {records} records")
    for s in storm_alone + storm_both:
        if s["connections"] <= 0 or s["failed"] != 0:
            bad.append(f"storm: {s['connections']} connections, {s['failed']} failed ({s['last_error']})")
    if bad:
        print("check failed: " + "; ".join(bad), file=sys.stderr)
        sys.exit(1)
    print("check passed")
PY
echo "reports in $out"
