#!/usr/bin/env bash
# `cairn consume` against kcat reading the same records from one broker, side
# by side: cairnd on a fresh data directory, N records of 100 bytes written to
# one partition with `cairn produce`, then each round reads the whole
# partition with `cairn consume TOPIC -e` and `kcat -C -t TOPIC -e -q` (both
# printing each value on a line, to /dev/null), the order alternating every
# round. Prints records/s per run and the medians. Both readers' output is
# checked to hold N lines once before the timed rounds.
#
# usage: tools/bench/cli_consume.sh [--rounds R] [--records N] [--cairnd PATH]
#            [--cairn PATH] [--kcat PATH]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
rounds=3
records=1000000
cairnd="$repo/build/core/server/cairnd"
cairn="$repo/build/cli/cairn"
kcat="$(command -v kcat || true)"
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds="$2"; shift ;;
        --records) records="$2"; shift ;;
        --cairnd) cairnd="$2"; shift ;;
        --cairn) cairn="$2"; shift ;;
        --kcat) kcat="$2"; shift ;;
        -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
[ -n "$kcat" ] || { echo "kcat not found (--kcat PATH)" >&2; exit 2; }

work="$(mktemp -d /tmp/cairn-cli-bench-XXXXXX)"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$cairnd" --override "listeners=PLAINTEXT://127.0.0.1:$port" --override "log.dirs=$work/data" \
    >"$work/cairnd.log" 2>&1 &
broker=$!
trap 'kill $broker 2>/dev/null; wait $broker 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do
    grep -q "cairnd started" "$work/cairnd.log" && break
    sleep 0.1
done
bs="127.0.0.1:$port"
"$cairn" topic create bench --partitions 1 -b "$bs" >/dev/null

now_ns() { date +%s%N; }
# Lines of exactly 100 bytes: a sequence number padded with x.
awk -v n="$records" 'BEGIN { pad = sprintf("%92s", ""); gsub(/ /, "x", pad);
    for (i = 0; i < n; i++) printf "%07d %s\n", i, pad }' >"$work/input"
t0=$(now_ns)
"$cairn" produce bench -b "$bs" <"$work/input"
t1=$(now_ns)
echo "{\"step\": \"cairn produce\", \"records\": $records, \"records_per_sec\": $((records * 1000000000 / (t1 - t0)))}"

got=$("$cairn" consume bench -b "$bs" -e | wc -l)
[ "$got" -eq "$records" ] || { echo "cairn consume read $got lines, want $records" >&2; exit 1; }
got=$("$kcat" -b "$bs" -C -t bench -e -q | wc -l)
[ "$got" -eq "$records" ] || { echo "kcat read $got lines, want $records" >&2; exit 1; }

run() { # $1 name: prints records/s of one full read
    local t0 t1
    t0=$(now_ns)
    if [ "$1" = cairn ]; then
        "$cairn" consume bench -b "$bs" -e >/dev/null
    else
        "$kcat" -b "$bs" -C -t bench -e -q >/dev/null
    fi
    t1=$(now_ns)
    echo $((records * 1000000000 / (t1 - t0)))
}
cairn_rates=()
kcat_rates=()
for r in $(seq "$rounds"); do
    if [ $((r % 2)) -eq 1 ]; then order="cairn kcat"; else order="kcat cairn"; fi
    for who in $order; do
        rate=$(run "$who")
        echo "{\"round\": $r, \"reader\": \"$who\", \"records_per_sec\": $rate, \"load\": \"$(cut -d' ' -f1 /proc/loadavg)\"}"
        if [ "$who" = cairn ]; then cairn_rates+=("$rate"); else kcat_rates+=("$rate"); fi
    done
done
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "{\"median_records_per_sec\": {\"cairn consume\": $(median "${cairn_rates[@]}"), \"kcat\": $(median "${kcat_rates[@]}")}}"
