#!/usr/bin/env bash
# Produce and consume throughput over SSL against PLAINTEXT, side by side on
# one broker: cairnd serves a PLAINTEXT and an SSL listener at once, and each
# round runs `cairn-bench produce` then `cairn-bench consume` of N records of
# 1 KiB over each listener in turn (the order alternates every round), each
# on its own topic, with --broker-pid for the broker CPU per record. The
# medians per protocol are printed at the end. Certificates are made with
# tests/integration/tls/make_certs.sh.
#
# usage: tools/bench/tls_vs_plain.sh [--rounds R] [--records N] [--cairnd PATH]...
#            [--bench PATH] [--out DIR]
#
# With --cairnd given more than once (e.g. the build before and after a
# change), each binary runs as its own broker, all started at once; every
# round runs each of them in turn (the order rotates by round) and the
# medians are printed per binary (A, B, ...), with B/A ratios of the broker
# CPU.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
rounds=3
records=300000
binaries=()
bench="$repo/build/tools/bench/cairn-bench"
out=""
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds="$2"; shift ;;
        --records) records="$2"; shift ;;
        --cairnd) binaries+=("$2"); shift ;;
        --bench) bench="$2"; shift ;;
        --out) out="$2"; shift ;;
        -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
    shift
done

[ ${#binaries[@]} -gt 0 ] || binaries=("$repo/build/core/server/cairnd")

work="$(mktemp -d /tmp/cairn-tls-bench-XXXXXX)"
[ -n "$out" ] || out="$work/reports"
mkdir -p "$out" "$work/certs"
sh "$repo/tests/integration/tls/make_certs.sh" "$work/certs"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
labels=(A B C D E F)
brokers=() plain_ports=() ssl_ports=()
cleanup() {
    for pid in "${brokers[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${brokers[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$work"/data-*
}
trap cleanup EXIT
for i in "${!binaries[@]}"; do
    plain_ports[i]=$(free_port)
    ssl_ports[i]=$(free_port)
    mkdir -p "$work/data-$i"
    "${binaries[i]}" --override "listeners=PLAINTEXT://127.0.0.1:${plain_ports[i]},SSL://127.0.0.1:${ssl_ports[i]}" \
        --override "log.dirs=$work/data-$i" --override "ssl.keystore.location=$work/certs/server.pem" \
        >"$work/cairnd-$i.log" 2>&1 &
    brokers[i]=$!
    for _ in $(seq 100); do
        grep -q "cairnd started" "$work/cairnd-$i.log" && break
        sleep 0.1
    done
    echo "${labels[i]}: ${binaries[i]} (pid ${brokers[i]})"
done

ssl_opts=(-X security.protocol=ssl -X "ssl.ca.location=$work/certs/ca.pem")
run() { # binary-index round protocol
    local i=$1 port opts=() tag
    tag="$3-$2"
    [ ${#binaries[@]} -eq 1 ] || tag="${labels[i]}-$tag"
    if [ "$3" = ssl ]; then port=${ssl_ports[i]}; opts=("${ssl_opts[@]}"); else port=${plain_ports[i]}; fi
    "$bench" produce --bootstrap "127.0.0.1:$port" --topic "t-$3-$2" --records "$records" --record-size 1024 \
        --partitions 1 --broker-pid "${brokers[i]}" "${opts[@]}" >"$out/produce-$tag.json"
    "$bench" consume --bootstrap "127.0.0.1:$port" --topic "t-$3-$2" --records "$records" \
        --broker-pid "${brokers[i]}" "${opts[@]}" >"$out/consume-$tag.json"
}
n=${#binaries[@]}
for r in $(seq "$rounds"); do
    for k in $(seq 0 $((n - 1))); do
        i=$(((k + r - 1) % n))
        if [ $((r % 2)) -eq 1 ]; then run "$i" "$r" plaintext; run "$i" "$r" ssl; else run "$i" "$r" ssl; run "$i" "$r" plaintext; fi
    done
done

python3 - "$out" "$rounds" "$n" <<'PY'
import json, statistics, sys
out, rounds, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
labels = "ABCDEF"[:n] if n > 1 else [""]
print(f"{'run':<22}{'MB/s':>10}{'msgs/s':>12}{'broker us/rec':>15}  per round (broker us/rec)")
cpu = {}
for kind in ("produce", "consume"):
    for proto in ("plaintext", "ssl"):
        for lab in labels:
            pre = f"{lab}-" if lab else ""
            reps = [json.load(open(f"{out}/{kind}-{pre}{proto}-{r}.json")) for r in range(1, rounds + 1)]
            mb = statistics.median(x["mb_per_sec"] for x in reps)
            msgs = statistics.median(x["msgs_per_sec"] for x in reps)
            per = [x["broker_cpu"]["us_per_record"] for x in reps]
            cpu[(kind, proto, lab)] = statistics.median(per)
            name = f"{kind} {proto}" + (f" {lab}" if lab else "")
            rounds_txt = " ".join(f"{v:.2f}" for v in per)
            print(f"{name:<22}{mb:>10.1f}{msgs:>12.0f}{cpu[(kind, proto, lab)]:>15.2f}  {rounds_txt}")
for lab in labels:
    extra = cpu[("consume", "ssl", lab)] - cpu[("consume", "plaintext", lab)]
    print(f"consume ssl - plaintext{(' ' + lab) if lab else ''}: {extra:.2f} us/record")
for lab in labels[1:]:
    for kind in ("produce", "consume"):
        for proto in ("plaintext", "ssl"):
            a, b = cpu[(kind, proto, "A")], cpu[(kind, proto, lab)]
            print(f"{kind} {proto} {lab}/A: {b / a if a else float('nan'):.2f}")
PY
echo "reports in $out"
