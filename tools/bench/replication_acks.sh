#!/usr/bin/env bash
# acks=1 against acks=all on replication factor 3, side by side in one run:
# a local cluster of 3 combined broker,controller nodes (tools/cairn-cluster),
# and for each round one `cairn-bench produce` per acks setting (the order
# alternates each round) on a fresh topic of 3 partitions, 3 replicas and
# min.insync.replicas=2: N records of 1 KiB, linger.ms=5, as fast as the
# producer can (saturating: its latency is mostly its own queue).
# Prints one line per run (records/s, p50/p99 ms, the load average) and the
# medians per setting with their ratio.
#
# usage: tools/bench/replication_acks.sh [--rounds 3] [--records 300000]
#            [--base-port 27800] [--dir D]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
bench="${CAIRN_BENCH:-$repo/build/tools/bench/cairn-bench}"
CAIRN="${CAIRN:-$repo/build/cli/cairn}"
export CAIRN
rounds=3 records=300000 base_port=27800 dir=""
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds="$2"; shift 2 ;;
        --records) records="$2"; shift 2 ;;
        --base-port) base_port="$2"; shift 2 ;;
        --dir) dir="$2"; shift 2 ;;
        -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "replication_acks: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
[ -n "$dir" ] || dir="$(mktemp -d "${TMPDIR:-/tmp}/cairn-acks-XXXXXX")"
mkdir -p "$dir"
c="$dir/cluster"
trap '"$repo/tools/cairn-cluster" down --dir "$c" > /dev/null 2>&1 || true' EXIT
"$repo/tools/cairn-cluster" up --combined 3 --dir "$c" --base-port "$base_port" > "$dir/up.log"
"$repo/tools/cairn-cluster" wait-leader --dir "$c" > /dev/null
bootstrap="127.0.0.1:$((base_port + 1)),127.0.0.1:$((base_port + 2)),127.0.0.1:$((base_port + 3))"

run() { # acks round
    local t="acks-$1-$2" id
    for _ in $(seq 1 60); do
        for id in 1 2 3; do
            "$CAIRN" topic create "$t" -p 3 -r 3 -c min.insync.replicas=2 -b "127.0.0.1:$((base_port + id))" \
                >> "$dir/up.log" 2>&1 && break 2
        done
        sleep 0.5
    done
    "$bench" wait-topic --bootstrap "$bootstrap" --topic "$t" --partitions 3 > /dev/null
    local load; load="$(cut -d' ' -f1 /proc/loadavg)"
    "$bench" produce --bootstrap "$bootstrap" --topic "$t" --records "$records" --acks "$1" --partitions 3 \
        --replication-factor 3 > "$dir/$t.json"
    python3 - "$dir/$t.json" "$1" "$2" "$load" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("run acks=%s round=%s records_per_s=%.0f p50_ms=%.1f p99_ms=%.1f failed=%d load=%s" % (
    sys.argv[2], sys.argv[3], r["msgs_per_sec"], r["latency_ms"]["p50"], r["latency_ms"]["p99"], r["failed"], sys.argv[4]))
PY
}
for r in $(seq 1 "$rounds"); do
    if [ $((r % 2)) = 1 ]; then run 1 "$r"; run all "$r"; else run all "$r"; run 1 "$r"; fi
done | tee "$dir/runs.txt"
python3 - "$dir/runs.txt" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = dict(kv.split("=") for kv in line.split()[1:])
    rows.setdefault(f["acks"], []).append(f)
med = {a: {k: statistics.median(float(x[k]) for x in v) for k in ("records_per_s", "p50_ms", "p99_ms")} for a, v in rows.items()}
for a in ("1", "all"):
    m = med[a]
    print("median acks=%s records_per_s=%.0f p50_ms=%.1f p99_ms=%.1f" % (a, m["records_per_s"], m["p50_ms"], m["p99_ms"]))
print("ratio all/1 records_per_s=%.2f p99=%.2f" % (med["all"]["records_per_s"] / med["1"]["records_per_s"],
                                                   med["all"]["p99_ms"] / med["1"]["p99_ms"]))
PY
