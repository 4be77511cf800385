#!/usr/bin/env bash
# acks=1 against acks=all on replication factor 3, side by side in one run:
# a local cluster of 3 combined broker,controller nodes (tools/cairn-cluster),
# and for each round one `cairn-bench produce` per setting (the order
# alternates each round) on a fresh topic of 3 partitions, records of 1 KiB.
#
# Without --rate (saturating): acks=1 and acks=all, both on 3 replicas with
# min.insync.replicas=2, N records each as fast as the producer can, linger
# 5 ms (the latency is then mostly the producer's own queue).
# With --rate R[,R...] (fixed rate, open loop): acks=1 on 1 replica against
# acks=all on 3 replicas with min.insync.replicas=2, for --seconds S at each
# rate R records/s (`cairn-bench produce --rate`: latency from each record's
# due time), linger --linger-ms (default 0 in this mode).
# Prints one line per run (records/s, latency percentiles, the three
# brokers' CPU seconds per second and context switches per record, load
# average at its start and end) and
# the medians per setting with their ratio.
# With --floor (fixed rate only), each round also runs cairn-hop-floor at
# the same rate and duration: the acks=all RF 3 path's thread and process
# hand-offs with no broker in them (hop), the same with no hand-off inside a
# process (hop-inline), and the acks=1 RF 1 shape (hop-rf1).
#
# usage: tools/bench/replication_acks.sh [--rounds 3] [--records 300000]
#            [--rate R[,R...] [--seconds 10] [--floor]] [--linger-ms MS]
#            [--prop key=value]... [--client key=value]... [--base-port 27800] [--dir D]
# --prop is added to every node's server.properties (cairn-cluster up),
# --client is a librdkafka property of every run (cairn-bench -X).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
bench="${CAIRN_BENCH:-$repo/build/tools/bench/cairn-bench}"
hop_floor="${CAIRN_HOP_FLOOR:-$repo/build/tools/bench/cairn-hop-floor}"
CAIRN="${CAIRN:-$repo/build/cli/cairn}"
export CAIRN
rounds=3 records=300000 base_port=27800 dir="" rates="" seconds=10 linger="" props=() client=() floor=0
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds="$2"; shift 2 ;;
        --records) records="$2"; shift 2 ;;
        --rate) rates="$2"; shift 2 ;;
        --seconds) seconds="$2"; shift 2 ;;
        --floor) floor=1; shift ;;
        --linger-ms) linger="$2"; shift 2 ;;
        --prop) props+=(--prop "$2"); shift 2 ;;
        --client) client+=(-X "$2"); shift 2 ;;
        --base-port) base_port="$2"; shift 2 ;;
        --dir) dir="$2"; shift 2 ;;
        -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "replication_acks: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
[ -n "$dir" ] || dir="$(mktemp -d "${TMPDIR:-/tmp}/cairn-acks-XXXXXX")"
mkdir -p "$dir"
c="$dir/cluster"
trap '"$repo/tools/cairn-cluster" down --dir "$c" > /dev/null 2>&1 || true' EXIT
"$repo/tools/cairn-cluster" up --combined 3 --dir "$c" --base-port "$base_port" "${props[@]}" > "$dir/up.log"
"$repo/tools/cairn-cluster" wait-leader --dir "$c" > /dev/null
bootstrap="127.0.0.1:$((base_port + 1)),127.0.0.1:$((base_port + 2)),127.0.0.1:$((base_port + 3))"

# CPU seconds (user + system) the three brokers have used so far.
broker_cpu() {
    local id total=0 f
    for id in 1 2 3; do
        f=($(sed 's/.*) //' "/proc/$(cat "$c/node-$id/pid")/stat"))
        total=$((total + f[11] + f[12]))
    done
    python3 -c "print($total / $(getconf CLK_TCK))"
}

# Context switches (voluntary and not) of every thread of the three brokers so far.
broker_switches() {
    local id total=0 n
    for id in 1 2 3; do
        n="$(cat /proc/"$(cat "$c/node-$id/pid")"/task/*/status 2>/dev/null |
            awk '/ctxt_switches/ { s += $2 } END { print s + 0 }')"
        total=$((total + n))
    done
    echo "$total"
}

run() { # acks replicas round rate(0: saturating)
    local acks="$1" rf="$2" round="$3" rate="$4" t="acks-$1-rf$2-r$4-$3" id config=() load0 load1
    [ "$rf" -gt 1 ] && config=(-c min.insync.replicas=2)
    for _ in $(seq 1 60); do
        for id in 1 2 3; do
            "$CAIRN" topic create "$t" -p 3 -r "$rf" "${config[@]}" -b "127.0.0.1:$((base_port + id))" \
                >> "$dir/up.log" 2>&1 && break 2
        done
        sleep 0.5
    done
    "$bench" wait-topic --bootstrap "$bootstrap" --topic "$t" --partitions 3 > /dev/null
    local args=(--records "$records" --linger-ms "${linger:-5}")
    [ "$rate" -gt 0 ] && args=(--records "$((rate * seconds))" --rate "$rate" --linger-ms "${linger:-0}")
    load0="$(cut -d' ' -f1 /proc/loadavg)"
    local cpu0 t0 cpu1 t1 sw0 sw1
    cpu0="$(broker_cpu)" t0="$(date +%s.%N)" sw0="$(broker_switches)"
    "$bench" produce --bootstrap "$bootstrap" --topic "$t" --acks "$acks" --partitions 3 \
        --replication-factor "$rf" "${args[@]}" "${client[@]}" > "$dir/$t.json"
    cpu1="$(broker_cpu)" t1="$(date +%s.%N)" sw1="$(broker_switches)"
    load1="$(cut -d' ' -f1 /proc/loadavg)"
    python3 - "$dir/$t.json" "$acks" "$rf" "$round" "$rate" "$load0" "$load1" "$cpu0" "$cpu1" "$t0" "$t1" \
        "$((sw1 - sw0))" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
l = r["latency_ms"]
achieved = r["rate"]["achieved"] if "rate" in r else r["msgs_per_sec"]
cpu = (float(sys.argv[9]) - float(sys.argv[8])) / (float(sys.argv[11]) - float(sys.argv[10]))
print("run acks=%s rf=%s round=%s rate=%s records_per_s=%.0f p50_ms=%.2f p99_ms=%.2f p999_ms=%.2f max_ms=%.2f"
      " send_lag_max_ms=%.2f failed=%d cpu_s_per_s=%.2f switches_per_record=%.2f load=%s-%s" % (
    sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], achieved, l["p50"], l["p99"], l["p999"], l["max"],
    r["rate"]["send_lag_ms"]["max"] if "rate" in r else 0.0, r["failed"], cpu, int(sys.argv[12]) / r["records"],
    sys.argv[6], sys.argv[7]))
PY
}

floor_run() { # kind round rate: cairn-hop-floor beside the cluster (idle then)
    local kind="$1" round="$2" rate="$3" args=() load0 load1
    case "$kind" in hop-inline) args=(--inline) ;; hop-rf1) args=(--followers 0) ;; esac
    load0="$(cut -d' ' -f1 /proc/loadavg)"
    "$hop_floor" --rate "$rate" --seconds "$seconds" --dir "$dir" "${args[@]}" > "$dir/$kind-r$rate-$round.json"
    load1="$(cut -d' ' -f1 /proc/loadavg)"
    python3 - "$dir/$kind-r$rate-$round.json" "$kind" "$round" "$rate" "$load0" "$load1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("run acks=%s rf=%d round=%s rate=%s records_per_s=%s p50_ms=%.2f p99_ms=%.2f p999_ms=%.2f max_ms=%.2f"
      " send_lag_max_ms=0 failed=0 cpu_s_per_s=%.2f switches_per_record=%.2f handoffs_per_record=%.2f load=%s-%s" % (
    sys.argv[2], 3 if r["followers"] else 1, sys.argv[3], sys.argv[4], sys.argv[4], r["p50_ms"], r["p99_ms"],
    r["p999_ms"], r["max_ms"], r["broker_cpu_s_per_s"], r["switches_per_record"], r["handoffs_per_record"],
    sys.argv[5], sys.argv[6]))
PY
}

echo "loadavg at start: $(cat /proc/loadavg)" | tee "$dir/load.txt"
if [ -z "$rates" ]; then
    for r in $(seq 1 "$rounds"); do
        if [ $((r % 2)) = 1 ]; then run 1 3 "$r" 0; run all 3 "$r" 0; else run all 3 "$r" 0; run 1 3 "$r" 0; fi
    done
else
    for rate in ${rates//,/ }; do
        for r in $(seq 1 "$rounds"); do
            if [ $((r % 2)) = 1 ]; then run 1 1 "$r" "$rate"; run all 3 "$r" "$rate"
            else run all 3 "$r" "$rate"; run 1 1 "$r" "$rate"; fi
            if [ "$floor" = 1 ]; then
                floor_run hop "$r" "$rate"; floor_run hop-inline "$r" "$rate"; floor_run hop-rf1 "$r" "$rate"
            fi
        done
    done
fi | tee "$dir/runs.txt"
echo "loadavg at end: $(cat /proc/loadavg)" | tee -a "$dir/load.txt"
python3 - "$dir/runs.txt" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = dict(kv.split("=") for kv in line.split()[1:])
    rows.setdefault((f["rate"], f["acks"]), []).append(f)
keys = ("records_per_s", "p50_ms", "p99_ms", "p999_ms", "max_ms", "cpu_s_per_s", "switches_per_record")
med = {k: {m: statistics.median(float(x[m]) for x in v) for m in keys} for k, v in rows.items()}
for rate in sorted({k[0] for k in med}, key=int):
    for acks in ("1", "all", "hop", "hop-inline", "hop-rf1"):
        if (rate, acks) not in med:
            continue
        m = med[(rate, acks)]
        p99s = ", ".join("%.2f" % float(x["p99_ms"]) for x in rows[(rate, acks)])
        print("median rate=%s acks=%s records_per_s=%.0f p50_ms=%.2f p99_ms=%.2f p999_ms=%.2f max_ms=%.2f"
              " cpu_s_per_s=%.2f switches_per_record=%.2f p99_per_run=%s" % (
                  rate, acks, m["records_per_s"], m["p50_ms"], m["p99_ms"], m["p999_ms"], m["max_ms"],
                  m["cpu_s_per_s"], m["switches_per_record"], p99s))
    a, b = med[(rate, "all")], med[(rate, "1")]
    print("ratio rate=%s all/1 records_per_s=%.2f p50=%.2f p99=%.2f" % (
        rate, a["records_per_s"] / b["records_per_s"], a["p50_ms"] / b["p50_ms"], a["p99_ms"] / b["p99_ms"]))
PY
