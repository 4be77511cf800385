#!/usr/bin/env bash
# Benchmarks librdkafka's mock cluster (in its own process) and cairnd on
# this machine, one after the other, and prints them side by side.
#
# usage: tools/bench/compare.sh [CAIRND] [--bench PATH] [--records N]
#            [--startup-partitions P] [--hold-gb G] [--quick] [--out DIR]
#
# CAIRND defaults to build/core/server/cairnd; when it is missing only the
# mock cluster is measured. --quick scales everything down for a smoke run.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

cairnd="$repo/build/core/server/cairnd"
bench=""
records=1000000
startup_partitions=1000
hold_gb=2
out=""

while [ $# -gt 0 ]; do
    case "$1" in
        --bench) bench="$2"; shift ;;
        --records) records="$2"; shift ;;
        --startup-partitions) startup_partitions="$2"; shift ;;
        --hold-gb) hold_gb="$2"; shift ;;
        --out) out="$2"; shift ;;
        --quick) records=100000; startup_partitions=100; hold_gb=0.1 ;;
        -h|--help) sed -n '5,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
[ -n "$out" ] || out="$(mktemp -d /tmp/cairn-compare.XXXXXX)"
mkdir -p "$out"
have_cairnd=0
[ -x "$cairnd" ] && have_cairnd=1

broker_pid=""
broker_dir=""
bootstrap=""

stop_broker() {
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
}

cleanup() {
    stop_broker
    [ -n "$broker_dir" ] && rm -rf "$broker_dir"
    return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now() { date +%s.%N; }
elapsed() { python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 3))" "$1" "$2"; }
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo ""; }
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

wait_port() {
    local port="$1"
    for _ in $(seq 1 600); do
        kill -0 "$broker_pid" 2>/dev/null || return 1
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}

start_mock() { # [topic partitions]
    local args=(mock-cluster --brokers 1)
    [ $# -eq 2 ] && args+=(--topic "$1" --partitions "$2")
    "$bench" "${args[@]}" >"$out/mock.addr" 2>>"$out/mock.log" &
    broker_pid=$!
    for _ in $(seq 1 200); do
        [ -s "$out/mock.addr" ] && break
        sleep 0.05
    done
    bootstrap="$(head -n1 "$out/mock.addr")"
    [ -n "$bootstrap" ] || { echo "mock cluster did not start" >&2; return 1; }
}

# Starts cairnd; reuses broker_dir when set (restart on existing data).
start_cairnd() {
    local port
    port="$(free_port)"
    [ -n "$broker_dir" ] || broker_dir="$(mktemp -d /tmp/cairn-bench-data.XXXXXX)"
    "$cairnd" --override "listeners=PLAINTEXT://127.0.0.1:$port" \
        --override "advertised.listeners=PLAINTEXT://127.0.0.1:$port" \
        --override "log.dirs=$broker_dir/data" \
        --override "num.partitions=1" \
        --override "auto.create.topics.enable=true" \
        --override "offsets.topic.replication.factor=1" \
        >>"$out/cairnd.log" 2>&1 &
    broker_pid=$!
    bootstrap="127.0.0.1:$port"
    wait_port "$port" || { echo "cairnd did not start; see $out/cairnd.log" >&2; tail -n 20 "$out/cairnd.log" >&2; return 1; }
}

fresh_cairnd() {
    stop_broker
    [ -n "$broker_dir" ] && rm -rf "$broker_dir"
    broker_dir=""
    start_cairnd
}

run_bench() { # name args...
    local name="$1"
    shift
    echo "  $name" >&2
    if ! "$bench" "$@" --bootstrap "$bootstrap" --broker-pid "$broker_pid" >"$out/$name.json" 2>>"$out/bench.log"; then
        echo "    (incomplete, see $out/$name.json and $out/bench.log)" >&2
    fi
}

throughput() { # target
    local t="$1"
    run_bench "$t-produce" produce --topic bench --records "$records" --record-size 1024 \
        --acks 1 --linger-ms 5 --partitions 1
    # The mock cluster keeps only the last ~5 MiB of each partition, so there
    # it reads what is left; rates stay comparable, counts do not.
    run_bench "$t-consume" consume --topic bench --records "$records" --idle-timeout-ms 5000
    echo "{\"rss_kib\": $(rss_kib "$broker_pid")}" >"$out/$t-rss.json"
}

echo "results in $out" >&2
echo "mock cluster: throughput" >&2
start_mock bench 1
throughput mock
stop_broker

echo "mock cluster: start-up with $startup_partitions partitions" >&2
t0="$(now)"
start_mock startup "$startup_partitions"
"$bench" wait-topic --bootstrap "$bootstrap" --topic startup --partitions "$startup_partitions" \
    --idle-timeout-ms 120000 >"$out/mock-wait.json" 2>>"$out/bench.log" || true
echo "{\"seconds\": $(elapsed "$t0" "$(now)")}" >"$out/mock-startup.json"
stop_broker

if [ "$have_cairnd" = 1 ]; then
    echo "cairnd: throughput" >&2
    fresh_cairnd
    throughput cairnd

    echo "cairnd: start-up with $startup_partitions partitions" >&2
    fresh_cairnd
    run_bench cairnd-startup-fill produce --topic startup --records "$startup_partitions" \
        --record-size 100 --partitions "$startup_partitions"
    stop_broker
    t0="$(now)"
    start_cairnd
    "$bench" wait-topic --bootstrap "$bootstrap" --topic startup --partitions "$startup_partitions" \
        --idle-timeout-ms 300000 >"$out/cairnd-wait.json" 2>>"$out/bench.log" || true
    echo "{\"seconds\": $(elapsed "$t0" "$(now)")}" >"$out/cairnd-startup.json"

    echo "cairnd: RSS while holding $hold_gb GB of log" >&2
    fresh_cairnd
    hold_records="$(python3 -c "import sys; print(int(float(sys.argv[1]) * 2**30 / 1024))" "$hold_gb")"
    run_bench cairnd-hold-fill produce --topic hold --records "$hold_records" --record-size 1024 \
        --acks 1 --linger-ms 5 --partitions 1
    rss_live="$(rss_kib "$broker_pid")"
    stop_broker
    start_cairnd
    "$bench" wait-topic --bootstrap "$bootstrap" --topic hold --partitions 1 \
        --idle-timeout-ms 300000 >/dev/null 2>>"$out/bench.log" || true
    echo "{\"gb\": $hold_gb, \"rss_kib_after_write\": ${rss_live:-null}, \"rss_kib_after_restart\": $(rss_kib "$broker_pid")}" \
        >"$out/cairnd-hold.json"
    stop_broker
else
    echo "cairnd not found at $cairnd: Cairn's column is left empty" >&2
fi

python3 "$here/compare_table.py" "$out" "$records" "$startup_partitions" "$hold_gb" | tee "$out/summary.txt"
