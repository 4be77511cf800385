#!/usr/bin/env bash
# Compares the produce CPU per record and throughput of two or more cairnd
# binaries (or librdkafka's mock cluster, named `mock`) on a shared, noisy
# machine: runs alternate between them (the order rotates every round), each
# cairnd on a fresh data directory, and the medians are printed per binary.
#
# usage: tools/bench/ab_produce.sh [--rounds R] [--records N] [--bench PATH]
#            [--perf-stat] [--out DIR] [--override key=value]...
#            [--compression CODEC] [--write-floor] CAIRND|mock...
#
# Each run: cairnd on a free loopback port, `cairn-bench produce` of N
# records of 1 KiB to one partition, acks=1, linger.ms=5, --broker-pid;
# --compression sets the producer's codec (none, gzip, snappy, lz4, zstd).
# --perf-stat also wraps each run's broker in `perf stat -p` (cycles,
# user/kernel split) and keeps the output next to the JSON reports.
# --write-floor also measures, after each cairnd run, the CPU per record of
# appending that run's own batches (sizes read from its segments) to a new
# file on the same file system (`cairn-write-floor`, reserve-steps, three
# passes: the first into memory the page cache must obtain, the others into
# pages the previous pass freed), and prints per round the ratios cairnd /
# mock and cairnd / (mock + write). The load average is kept for every run.
# On a VM whose kernel hands free memory back to the host
# (/sys/module/page_reporting), the setting and the amount handed back
# during the series are printed: page cache built on memory the host took
# back costs the broker several times more to write (docs/benchmarks.md).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

rounds=5
records=1000000
bench="$repo/build/tools/bench/cairn-bench"
perf_stat=0
out=""
compression=none
overrides=()
binaries=()
write_floor=0

while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds="$2"; shift ;;
        --records) records="$2"; shift ;;
        --bench) bench="$2"; shift ;;
        --perf-stat) perf_stat=1 ;;
        --out) out="$2"; shift ;;
        --override) overrides+=(--override "$2"); shift ;;
        --compression) compression="$2"; shift ;;
        --write-floor) write_floor=1 ;;
        -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "unknown option $1" >&2; exit 2 ;;
        *) binaries+=("$1") ;;
    esac
    shift
done
[ ${#binaries[@]} -ge 1 ] || { echo "name at least one cairnd binary" >&2; exit 2; }
[ -x "$bench" ] || { echo "cairn-bench not found at $bench (pass --bench)" >&2; exit 1; }
floor_bin="$(dirname "$bench")/cairn-write-floor"
if [ "$write_floor" = 1 ] && [ ! -x "$floor_bin" ]; then
    echo "cairn-write-floor not found next to cairn-bench" >&2
    exit 1
fi
[ -n "$out" ] || out="$(mktemp -d /tmp/cairn-ab.XXXXXX)"
mkdir -p "$out"

broker_pid=""
perf_pid=""
data_dir=""

stop_broker() {
    if [ -n "$perf_pid" ]; then
        kill -INT "$perf_pid" 2>/dev/null || true
        wait "$perf_pid" 2>/dev/null || true
        perf_pid=""
    fi
    if [ -n "$broker_pid" ] && kill -0 "$broker_pid" 2>/dev/null; then
        kill -TERM "$broker_pid" 2>/dev/null || true
        for _ in $(seq 1 100); do
            kill -0 "$broker_pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$broker_pid" 2>/dev/null || true
        wait "$broker_pid" 2>/dev/null || true
    fi
    broker_pid=""
    [ -n "$data_dir" ] && rm -rf "$data_dir"
    data_dir=""
}
trap stop_broker EXIT
trap 'exit 130' INT TERM

reporting=/sys/module/page_reporting/parameters
reported_kib() {
    cat "$reporting/reported_kib" 2>/dev/null || echo 0
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

start_mock() { # tag; sets broker_pid and port
    "$bench" mock-cluster --brokers 1 --topic ab --partitions 1 >"$out/$1.addr" 2>"$out/$1.log" &
    broker_pid=$!
    for _ in $(seq 1 200); do
        [ -s "$out/$1.addr" ] && break
        sleep 0.05
    done
    port="$(head -n1 "$out/$1.addr" | sed 's/.*://')"
}

run_one() { # binary-index round
    local idx="$1" round="$2" bin="${binaries[$1]}" port tag
    tag="b$idx-r$round"
    cut -d' ' -f1-3 /proc/loadavg >"$out/$tag.load"
    if [ "$bin" = mock ]; then
        start_mock "$tag"
    else
        port="$(free_port)"
        data_dir="$(mktemp -d /tmp/cairn-ab-data.XXXXXX)"
        "$bin" --override "listeners=PLAINTEXT://127.0.0.1:$port" \
            --override "advertised.listeners=PLAINTEXT://127.0.0.1:$port" \
            --override "log.dirs=$data_dir/data" --override "num.partitions=1" \
            --override "offsets.topic.replication.factor=1" "${overrides[@]}" \
            >"$out/$tag.log" 2>&1 &
        broker_pid=$!
        for _ in $(seq 1 200); do
            (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
            sleep 0.05
        done
    fi
    if [ "$perf_stat" = 1 ]; then
        perf stat -e task-clock,cycles,cycles:u,cycles:k,instructions -p "$broker_pid" \
            -o "$out/$tag.perfstat" &
        perf_pid=$!
    fi
    "$bench" produce --bootstrap "127.0.0.1:$port" --topic ab --records "$records" \
        --record-size 1024 --acks 1 --linger-ms 5 --partitions 1 --compression "$compression" \
        --broker-pid "$broker_pid" \
        >"$out/$tag.json" 2>>"$out/bench.log" || echo "  $tag incomplete" >&2
    if [ "$write_floor" = 1 ] && [ "$bin" != mock ]; then
        # The sizes are read while the segments exist; the write runs after
        # they are deleted, on the same file system, as the next run would.
        find "$data_dir/data" -path '*/ab-0/*.log' | sort |
            xargs "$floor_bin" --sizes-out "$out/$tag.sizes" 2>>"$out/bench.log" || true
        local floor_dir
        floor_dir="$(dirname "$data_dir")"
        stop_broker
        if [ -s "$out/$tag.sizes" ]; then
            "$floor_bin" --sizes "$out/$tag.sizes" --dir "$floor_dir" \
                reserve-steps reserve-steps reserve-steps >"$out/$tag.floor.json" 2>>"$out/bench.log" || echo "  $tag floor incomplete" >&2
        fi
    fi
    stop_broker
    python3 - "$out/$tag.json" "$idx" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
b = r.get("broker_cpu", {})
print(f"  binary {sys.argv[2]}: {r.get('msgs_per_sec', 0):>10.0f} msgs/s  "
      f"broker {b.get('us_per_record', float('nan')):.3f} us/record", file=sys.stderr)
EOF
}

echo "results in $out" >&2
reported_at_start="$(reported_kib)"
if [ -r "$reporting/reported_kib" ]; then
    echo "free page reporting to the host is on (order $(cat "$reporting/page_reporting_order")$(
        [ -r "$reporting/min_free_ms" ] && echo ", min_free_ms $(cat "$reporting/min_free_ms")"))" >&2
fi
n=${#binaries[@]}
for round in $(seq 1 "$rounds"); do
    for k in $(seq 0 $((n - 1))); do
        run_one $(((k + round) % n)) "$round"
    done
done

if [ -r "$reporting/reported_kib" ]; then
    echo "memory handed back to the host during the series: $((($(reported_kib) - reported_at_start) / 1024)) MiB"
fi
python3 - "$out" "$n" "${binaries[@]}" <<'EOF'
import glob, json, os, statistics, sys
out, n, bins = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
meds = []
for i in range(n):
    cpu, rate, p99 = [], [], []
    for f in sorted(glob.glob(os.path.join(out, f"b{i}-r*.json"))):
        try:
            r = json.load(open(f))
            cpu.append(r["broker_cpu"]["us_per_record"])
            rate.append(r["msgs_per_sec"])
            p99.append(r["latency_ms"]["p99"])
        except (ValueError, KeyError):
            pass
    if not cpu:
        print(f"{bins[i]}: no complete run")
        meds.append(None)
        continue
    m = statistics.median(cpu)
    meds.append((m, statistics.median(rate)))
    print(f"{bins[i]}: runs {len(cpu)}  broker us/record median {m:.3f} "
          f"(min {min(cpu):.3f} max {max(cpu):.3f})  msgs/s median {statistics.median(rate):.0f} "
          f"(min {min(rate):.0f} max {max(rate):.0f})  latency p99 ms median {statistics.median(p99):.1f}")
def load(tag):
    try:
        return json.load(open(os.path.join(out, tag + ".json")))
    except (OSError, ValueError):
        return None
def floor(tag):
    modes = {}
    try:
        for line in open(os.path.join(out, tag + ".floor.json")):
            f = json.loads(line)
            key = f["mode"] + ("+index" if f["index"] else "")
            modes.setdefault(key + " first", f)
            if key + " least" not in modes or f["cpu_us"] < modes[key + " least"]["cpu_us"]:
                modes[key + " least"] = f
    except (OSError, ValueError):
        pass
    return modes
mock = bins.index("mock") if "mock" in bins else None
if mock is not None:
    rounds = sorted({int(f.rsplit("-r", 1)[1].split(".")[0]) for f in glob.glob(os.path.join(out, "b*-r*.json"))})
    for i in range(n):
        if i == mock:
            continue
        rows = []
        for rd in rounds:
            m, c = load(f"b{mock}-r{rd}"), load(f"b{i}-r{rd}")
            if not m or not c or "broker_cpu" not in m or "broker_cpu" not in c:
                continue
            mu, cu = m["broker_cpu"]["us_per_record"], c["broker_cpu"]["us_per_record"]
            fl = floor(f"b{i}-r{rd}")
            w = {k: v["cpu_us_per_record"] for k, v in fl.items()}
            batch = next(iter(fl.values()))["mean_batch_bytes"] if fl else float("nan")
            with open(os.path.join(out, f"b{i}-r{rd}.load")) as lf:
                la = lf.read().split()[0]
            rows.append((rd, la, mu, cu, w, c["msgs_per_sec"] / m["msgs_per_sec"], batch))
        if not rows:
            continue
        print(f"{bins[i]} against mock, per round:")
        for rd, la, mu, cu, w, tr, batch in rows:
            ws = " ".join(f"{k} {v:.3f}" for k, v in sorted(w.items()))
            ratio = "".join(f"  cairnd/(mock+write {k}) {cu / (mu + v):.2f}" for k, v in sorted(w.items()))
            print(f"  round {rd} load {la}: mock {mu:.3f} cairnd {cu:.3f} us/record, write {ws} "
                  f"(mean batch {batch:.0f} B); cairnd/mock {cu / mu:.2f}{ratio}, msgs/s cairnd/mock {tr:.2f}")
        med = statistics.median
        print(f"  medians of the per-round ratios: cairnd/mock {med([r[3] / r[2] for r in rows]):.2f}, "
              f"msgs/s {med([r[5] for r in rows]):.2f}", end="")
        for k in sorted({k for r in rows for k in r[4]}):
            vals = [r for r in rows if k in r[4]]
            print(f", write {k} {med([r[4][k] for r in vals]):.3f} us/record, "
                  f"cairnd/(mock+write {k}) {med([r[3] / (r[2] + r[4][k]) for r in vals]):.2f}", end="")
        print()
if n > 1 and meds[0]:
    for i in range(1, n):
        if meds[i]:
            print(f"ratio binary {i} / binary 0: broker us/record {meds[i][0] / meds[0][0]:.2f}, "
                  f"msgs/s {meds[i][1] / meds[0][1]:.2f}")
EOF
