#!/usr/bin/env bash
# Produce throughput with transactions of 1, 100 and 10,000 records versus
# the idempotent producer without transactions, against one cairnd, in
# alternating rounds, and prints medians and ratios.
#
# usage: tools/bench/txn.sh [CAIRND] [--bench PATH] [--records N]
#            [--records-txn1 N] [--rounds R] [--record-size B] [--out DIR]
#            [--modes "idempotent txn-1 ..."] [--override KEY=VALUE]...
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

cairnd="$repo/build/core/server/cairnd"
bench=""
records=200000
records_txn1=3000
rounds=3
record_size=1024
out=""
modes_arg=""
overrides=()

while [ $# -gt 0 ]; do
    case "$1" in
        --bench) bench="$2"; shift ;;
        --records) records="$2"; shift ;;
        --records-txn1) records_txn1="$2"; shift ;;
        --rounds) rounds="$2"; shift ;;
        --record-size) record_size="$2"; shift ;;
        --out) out="$2"; shift ;;
        --modes) modes_arg="$2"; shift ;;
        --override) overrides+=(--override "$2"); shift ;;
        -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "unknown option $1" >&2; exit 2 ;;
        *) cairnd="$1" ;;
    esac
    shift
done

if [ -z "$bench" ]; then
    for candidate in "$repo/build/tools/bench/cairn-bench" "$(command -v cairn-bench || true)"; do
        if [ -n "$candidate" ] && [ -x "$candidate" ]; then bench="$candidate"; break; fi
    done
fi
[ -n "$bench" ] && [ -x "$bench" ] || { echo "cairn-bench not found (build it or pass --bench)" >&2; exit 1; }
[ -x "$cairnd" ] || { echo "cairnd not found at $cairnd" >&2; exit 1; }
[ -n "$out" ] || out="$(mktemp -d /tmp/cairn-bench-txn.XXXXXX)"
mkdir -p "$out"

broker_pid=""
broker_dir="$(mktemp -d /tmp/cairn-bench-txn-data.XXXXXX)"
cleanup() {
    if [ -n "$broker_pid" ] && kill -0 "$broker_pid" 2>/dev/null; then
        kill -TERM "$broker_pid" 2>/dev/null || true
        wait "$broker_pid" 2>/dev/null || true
    fi
    rm -rf "$broker_dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
"$cairnd" --override "listeners=PLAINTEXT://127.0.0.1:$port" \
    --override "advertised.listeners=PLAINTEXT://127.0.0.1:$port" \
    --override "log.dirs=$broker_dir/data" \
    --override "num.partitions=1" \
    --override "offsets.topic.replication.factor=1" \
    --override "transaction.state.log.replication.factor=1" \
    --override "transaction.state.log.min.isr=1" \
    "${overrides[@]}" \
    >>"$out/cairnd.log" 2>&1 &
broker_pid=$!
bootstrap="127.0.0.1:$port"
for _ in $(seq 1 600); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    kill -0 "$broker_pid" 2>/dev/null || { echo "cairnd exited; see $out/cairnd.log" >&2; exit 1; }
    sleep 0.05
done

# mode name, record count, extra produce options
modes=("idempotent" "txn-1" "txn-100" "txn-10000")
# shellcheck disable=SC2206
[ -z "$modes_arg" ] || modes=($modes_arg)
mode_args() {
    case "$1" in
        idempotent) echo "--records $records -X enable.idempotence=true" ;;
        txn-1) echo "--records $records_txn1 --txn-size 1" ;;
        txn-100) echo "--records $records --txn-size 100" ;;
        txn-10000) echo "--records $records --txn-size 10000" ;;
    esac
}

echo "results in $out" >&2
for round in $(seq 1 "$rounds"); do
    # Rotate the order each round so no mode always runs first.
    for i in $(seq 0 $((${#modes[@]} - 1))); do
        mode="${modes[$(((i + round - 1) % ${#modes[@]}))]}"
        topic="txn-bench-$mode-$round"
        echo "  round $round: $mode" >&2
        # shellcheck disable=SC2046
        if ! "$bench" produce --bootstrap "$bootstrap" --topic "$topic" --partitions 1 \
            --record-size "$record_size" --acks all --linger-ms 5 --broker-pid "$broker_pid" \
            --txn-id "bench-$mode" $(mode_args "$mode") >"$out/$mode-$round.json" 2>>"$out/bench.log"; then
            echo "    (incomplete, see $out/$mode-$round.json and $out/bench.log)" >&2
        fi
    done
done

python3 - "$out" "$rounds" "${modes[@]}" <<'EOF' | tee "$out/summary.txt"
import json, statistics, sys
out, rounds, modes = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
rows = {}
for m in modes:
    runs = []
    for r in range(1, rounds + 1):
        try:
            with open(f"{out}/{m}-{r}.json") as f:
                j = json.load(f)
        except (OSError, ValueError):
            continue
        if "error" not in j:
            runs.append(j)
    rows[m] = runs
base = statistics.median(j["msgs_per_sec"] for j in rows["idempotent"]) if rows.get("idempotent") else None
print(f"{'mode':<11} {'runs':>4} {'records':>8} {'msgs/s (median)':>16} {'MB/s':>7} {'vs idempotent':>14} "
      f"{'commit ms p50':>13} {'commit ms p99':>13} {'per-txn cost ms':>15}")
for m in modes:
    runs = rows[m]
    if not runs:
        print(f"{m:<11} {0:>4}  (no complete run)")
        continue
    rate = statistics.median(j["msgs_per_sec"] for j in runs)
    mb = statistics.median(j["mb_per_sec"] for j in runs)
    ratio = f"{rate / base:.3f}" if base else "-"
    c50 = c99 = cost = "-"
    if "commit_ms" in runs[0]:
        c50 = f"{statistics.median(j['commit_ms']['p50'] for j in runs):.2f}"
        c99 = f"{statistics.median(j['commit_ms']['p99'] for j in runs):.2f}"
        if base:
            # Time per transaction beyond what its records cost without transactions.
            size = runs[0]["txn_size"]
            cost = f"{(1.0 / rate - 1.0 / base) * size * 1000.0:.2f}"
    print(f"{m:<11} {len(runs):>4} {runs[0]['records']:>8} {rate:>16.0f} {mb:>7.1f} {ratio:>14} {c50:>13} {c99:>13} {cost:>15}")
EOF
