#!/usr/bin/env bash
# Measures cairnd's recovery after kill -9: produce G GB that is never
# flushed (flush intervals at their maximum), kill -9 the broker, restart it
# on the same data and read the recovery figures from its log.
#
# usage: tools/bench/recovery_bench.sh [CAIRND] [--gb G] [--partitions P]
#            [--bench PATH] [--drop-caches] [--settle-seconds S] [--keep] [--out DIR]
#            [--override KEY=VALUE]... [--reuse DIR]
#
# cairnd logs, for a log dir without the clean shutdown marker:
#   "<dir>: recovered N partitions, rescanned X MiB in T s (R MiB/s; scan S s,
#    producer state P s; K recovery threads)"
# (scan and producer state times are summed over the K threads).
# The script prints that line, the wall time from exec until the topic has
# leaders again, and a JSON summary (also written to DIR/recovery.json).
# --drop-caches (root) syncs and empties the page cache before the restart, so
# the scan reads from disk instead of memory; --settle-seconds waits before
# the kill. --override passes a broker config to both starts (e.g.
# num.recovery.threads.per.data.dir=2); later ones win over the script's.
# The data dir is deleted unless --keep, which leaves it as a kill -9 left it
# (the recovered broker is killed too). --reuse DIR skips the produce phase
# and recovers such a kept dir again (killing the broker afterwards), so runs
# with different overrides rescan the same bytes; --partitions must match.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

cairnd="$repo/build/core/server/cairnd"
bench="$repo/build/tools/bench/cairn-bench"
gb=2
partitions=1
drop_caches=0
settle=0
keep=0
out=""
reuse=""
overrides=()

while [ $# -gt 0 ]; do
    case "$1" in
        --gb) gb="$2"; shift ;;
        --partitions) partitions="$2"; shift ;;
        --bench) bench="$2"; shift ;;
        --drop-caches) drop_caches=1 ;;
        --settle-seconds) settle="$2"; shift ;;
        --keep) keep=1 ;;
        --reuse) reuse="$2"; shift ;;
        --out) out="$2"; shift ;;
        --override) overrides+=(--override "$2"); shift ;;
        -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "unknown option $1" >&2; exit 2 ;;
        *) cairnd="$1" ;;
    esac
    shift
done
[ -x "$cairnd" ] || { echo "cairnd not found at $cairnd" >&2; exit 1; }
[ -x "$bench" ] || { echo "cairn-bench not found at $bench (pass --bench)" >&2; exit 1; }
[ -n "$out" ] || out="$(mktemp -d /tmp/cairn-recovery.XXXXXX)"
mkdir -p "$out"
if [ -n "$reuse" ]; then
    [ -d "$reuse/data" ] || { echo "no data dir in $reuse" >&2; exit 1; }
    data_dir="$reuse"
    keep=1
else
    data_dir="$(mktemp -d /tmp/cairn-recovery-data.XXXXXX)"
fi
broker_pid=""

cleanup() {
    if [ -n "$broker_pid" ] && kill -0 "$broker_pid" 2>/dev/null; then
        # A kept dir must stay unclean so that the next --reuse rescans it.
        if [ "$keep" = 1 ]; then kill -KILL "$broker_pid" 2>/dev/null || true
        else kill -TERM "$broker_pid" 2>/dev/null || true; fi
        wait "$broker_pid" 2>/dev/null || true
    fi
    if [ "$keep" = 1 ]; then echo "data kept in $data_dir" >&2; else rm -rf "$data_dir"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
start_cairnd() { # log-file
    "$cairnd" --override "listeners=PLAINTEXT://127.0.0.1:$port" \
        --override "advertised.listeners=PLAINTEXT://127.0.0.1:$port" \
        --override "log.dirs=$data_dir/data" --override "num.partitions=1" \
        --override "offsets.topic.replication.factor=1" \
        --override "log.flush.interval.messages=9223372036854775807" \
        --override "log.flush.interval.ms=9223372036854775807" \
        --override "log.flush.scheduler.interval.ms=9223372036854775807" \
        "${overrides[@]}" >"$1" 2>&1 &
    broker_pid=$!
    for _ in $(seq 1 1200); do
        kill -0 "$broker_pid" 2>/dev/null || { echo "cairnd exited; see $1" >&2; exit 1; }
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
        sleep 0.05
    done
    echo "cairnd did not listen; see $1" >&2
    exit 1
}

if [ -z "$reuse" ]; then
    records="$(python3 -c "import sys; print(int(float(sys.argv[1]) * 1e9 / 1024))" "$gb")"
    echo "producing $records records of 1 KiB to $partitions partition(s)" >&2
    start_cairnd "$out/cairnd-fill.log"
    "$bench" produce --bootstrap "127.0.0.1:$port" --topic recovery --records "$records" \
        --record-size 1024 --acks 1 --linger-ms 5 --partitions "$partitions" \
        --broker-pid "$broker_pid" >"$out/fill.json" 2>>"$out/bench.log"
    [ "$settle" -gt 0 ] && sleep "$settle"
    kill -KILL "$broker_pid"
    wait "$broker_pid" 2>/dev/null || true
fi
broker_pid=""
log_bytes="$(find "$data_dir/data" -name '*.log' -path '*recovery-*' -printf '%s\n' | awk '{ s += $1 } END { printf "%.0f\n", s }')"
dirty_kib="$(awk '/^Dirty:/ { print $2 }' /proc/meminfo)"
if [ "$drop_caches" = 1 ]; then
    sync
    echo 3 >/proc/sys/vm/drop_caches
fi

t0="$(date +%s.%N)"
start_cairnd "$out/cairnd-recover.log"
"$bench" wait-topic --bootstrap "127.0.0.1:$port" --topic recovery --partitions "$partitions" \
    --idle-timeout-ms 600000 >"$out/wait.json" 2>>"$out/bench.log"
t1="$(date +%s.%N)"
line="$(grep -m1 'rescanned' "$out/cairnd-recover.log" || true)"
echo "$line" >&2
python3 - "$out" "$t0" "$t1" "$log_bytes" "$dirty_kib" "$drop_caches" "$line" <<'EOF' | tee "$out/recovery.json"
import json, re, sys
out, t0, t1, log_bytes, dirty_kib, dropped, line = sys.argv[1:8]
m = re.search(r"recovered (\d+) partitions, rescanned ([\d.]+) MiB in ([\d.]+) s .*scan ([\d.]+) s, "
              r"producer state ([\d.]+) s", line)
r = {"log_bytes": int(log_bytes), "dirty_kib_at_kill": int(dirty_kib or 0),
     "page_cache_dropped": dropped == "1",
     "restart_until_leaders_s": round(float(t1) - float(t0), 3)}
if m:
    mib, secs = float(m.group(2)), float(m.group(3))
    r.update({"partitions": int(m.group(1)), "rescanned_mib": mib, "recovery_s": secs,
              "scan_s": float(m.group(4)), "producer_state_s": float(m.group(5)),
              "gb_per_s": round(mib * 2**20 / 1e9 / secs, 2) if secs > 0 else None,
              "recovery_threads": int(t.group(1)) if (t := re.search(r"(\d+) recovery threads", line))
              else None,
              "scan_gb_per_s": round(mib * 2**20 / 1e9 / float(m.group(4)), 2)
              if float(m.group(4)) > 0 else None})
print(json.dumps(r))
EOF
