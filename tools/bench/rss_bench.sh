#!/usr/bin/env bash
# Measures cairnd's resident memory while it holds G GB of log in P
# partitions: right after writing it, after a clean restart, and after a
# kill -9 and the recovery that follows.
#
# usage: tools/bench/rss_bench.sh [CAIRND] [--gb G] [--partitions P]
#            [--bench PATH] [--keep] [--out DIR]
#
# Prints one JSON object (also DIR/rss.json) with VmRSS/VmHWM and the
# anonymous/file split of each phase, plus cairnd's recovery line after the
# kill -9. The data dir (G GB on the disk of /tmp) is deleted unless --keep.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

cairnd="$repo/build/core/server/cairnd"
bench="$repo/build/tools/bench/cairn-bench"
gb=10
partitions=100
keep=0
out=""

while [ $# -gt 0 ]; do
    case "$1" in
        --gb) gb="$2"; shift ;;
        --partitions) partitions="$2"; shift ;;
        --bench) bench="$2"; shift ;;
        --keep) keep=1 ;;
        --out) out="$2"; shift ;;
        -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "unknown option $1" >&2; exit 2 ;;
        *) cairnd="$1" ;;
    esac
    shift
done
[ -x "$cairnd" ] || { echo "cairnd not found at $cairnd" >&2; exit 1; }
[ -x "$bench" ] || { echo "cairn-bench not found at $bench (pass --bench)" >&2; exit 1; }
[ -n "$out" ] || out="$(mktemp -d /tmp/cairn-rss.XXXXXX)"
mkdir -p "$out"
data_dir="$(mktemp -d /tmp/cairn-rss-data.XXXXXX)"
broker_pid=""

stop_broker() { # signal
    if [ -n "$broker_pid" ] && kill -0 "$broker_pid" 2>/dev/null; then
        kill "-$1" "$broker_pid" 2>/dev/null || true
        wait "$broker_pid" 2>/dev/null || true
    fi
    broker_pid=""
}
cleanup() {
    stop_broker TERM
    if [ "$keep" = 1 ]; then echo "data kept in $data_dir" >&2; else rm -rf "$data_dir"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
start_cairnd() { # log-file
    "$cairnd" --override "listeners=PLAINTEXT://127.0.0.1:$port" \
        --override "advertised.listeners=PLAINTEXT://127.0.0.1:$port" \
        --override "log.dirs=$data_dir/data" --override "num.partitions=1" \
        --override "offsets.topic.replication.factor=1" >"$1" 2>&1 &
    broker_pid=$!
    for _ in $(seq 1 1200); do
        kill -0 "$broker_pid" 2>/dev/null || { echo "cairnd exited; see $1" >&2; exit 1; }
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
        sleep 0.05
    done
    echo "cairnd did not listen; see $1" >&2
    exit 1
}
wait_leaders() {
    "$bench" wait-topic --bootstrap "127.0.0.1:$port" --topic hold --partitions "$partitions" \
        --idle-timeout-ms 600000 >/dev/null 2>>"$out/bench.log"
}
memory() { # phase -> "phase": {...}
    awk -v phase="$1" '
        /^VmRSS:/ { rss = $2 } /^VmHWM:/ { hwm = $2 }
        /^RssAnon:/ { anon = $2 } /^RssFile:/ { file = $2 }
        END { printf "\"%s\": {\"vm_rss_kib\": %d, \"vm_hwm_kib\": %d, \"rss_anon_kib\": %d, \"rss_file_kib\": %d}",
              phase, rss, hwm, anon, file }' "/proc/$broker_pid/status"
}

records="$(python3 -c "import sys; print(int(float(sys.argv[1]) * 2**30 / 1024))" "$gb")"
echo "writing $gb GB ($records records of 1 KiB) to $partitions partitions" >&2
start_cairnd "$out/cairnd-fill.log"
"$bench" produce --bootstrap "127.0.0.1:$port" --topic hold --records "$records" \
    --record-size 1024 --acks 1 --linger-ms 5 --partitions "$partitions" \
    --broker-pid "$broker_pid" >"$out/fill.json" 2>>"$out/bench.log"
after_write="$(memory after_write)"
log_bytes="$(find "$data_dir/data" -name '*.log' -path '*hold-*' -printf '%s\n' | awk '{ s += $1 } END { printf "%.0f\n", s }')"
stop_broker TERM

start_cairnd "$out/cairnd-clean.log"
wait_leaders
after_clean_restart="$(memory after_clean_restart)"
stop_broker KILL

start_cairnd "$out/cairnd-recover.log"
wait_leaders
after_kill9_restart="$(memory after_kill9_restart)"
recovery="$(grep -m1 'rescanned' "$out/cairnd-recover.log" | sed 's/.*\] //; s/"/\\"/g' || true)"
echo "{\"gb\": $gb, \"partitions\": $partitions, \"log_bytes\": $log_bytes, $after_write, $after_clean_restart, $after_kill9_restart, \"recovery\": \"$recovery\"}" |
    tee "$out/rss.json"
