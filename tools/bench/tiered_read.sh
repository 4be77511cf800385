#!/usr/bin/env bash
# Tiered storage, side by side in one run (issue 18, "Measure"), for each
# remote store in turn: storage-local (a directory) and storage-s3 against
# s3rver (the S3-compatible server the storage-s3 tests use, on loopback).
# One broker per store; on it, per round, a topic without remote storage
# ("off") and a tiered one ("on", segments copied while the producer runs)
# each get --mb MB of 1 KiB records from cairn-bench produce (order
# alternating by round): produce MB/s and p99, tiering on against off.
# Topics have small segments (--segment-mb) and one byte of local
# retention, so once copied the tiered topic's data is only in the remote
# store. Then cairn-bench consume reads a topic from offset 0: the tiered
# one with an empty segment cache (cold), then per round the untiered one
# (the local log) and the tiered one again (warm cache), alternating; then
# cold reads again on restarted brokers (the cache starts empty), without
# read-ahead (remote.log.read.ahead.segments=0) and with it, alternating;
# then per round one Fetch from offset 0 on a restarted broker without
# read-ahead (first_fetch.py): the cold first-fetch latency and the bytes
# downloaded for it, beside the same Fetch of the local topic.
# Prints per-round MB/s (from the first record to the last: librdkafka may
# wait up to 0.5 s before its first ListOffsets, which would swamp a read of
# a second or less), medians, ratios to the local read and the median time
# to the first record.
#
# --override KEY=VALUE (repeatable) adds a broker config to every broker
# (e.g. remote.log.manager.copy.max.bytes.per.second); --produce-only skips
# the reads and reports the produce comparison and the time, after the last
# produce, until every tiered topic was copied. --settle waits, before each
# produce, until the tiered topics produced so far are copied and every
# dirty page is written (sync), so a copy overlaps only the produce of its
# own topic and each produce starts with the disk idle (without it, copies
# and writeback spill into the next produce, "off" ones included, and the
# second produce of a round is the slower one); the summary then adds the
# on/off ratio of each round's pair.
#
# usage: tools/bench/tiered_read.sh [--mb 256] [--segment-mb 8] [--rounds 3]
#            [--read-ahead 1] [--s3rver-dir DIR] [--no-s3] [--build DIR] [--out DIR]
#            [--override KEY=VALUE]... [--produce-only] [--settle]
# --mb 1024 is the issue's 1 GB. --s3rver-dir: a tests/clients/s3rver with
# its node_modules installed (default: this tree's).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="$repo/build"
mb=256
segment_mb=8
rounds=3
read_ahead=1
s3rver_dir="$repo/tests/clients/s3rver"
with_s3=1
out=""
extra=()
produce_only=0
settle=0
while [ $# -gt 0 ]; do
    case "$1" in
        --mb) mb="$2"; shift ;;
        --segment-mb) segment_mb="$2"; shift ;;
        --rounds) rounds="$2"; shift ;;
        --read-ahead) read_ahead="$2"; shift ;;
        --s3rver-dir) s3rver_dir="$2"; shift ;;
        --no-s3) with_s3=0 ;;
        --build) build="$2"; shift ;;
        --out) out="$2"; shift ;;
        --override) extra+=("$2"); shift ;;
        --produce-only) produce_only=1 ;;
        --settle) settle=1 ;;
        -h|--help) sed -n '2,38p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
cairnd="$build/core/server/cairnd"
bench="$build/tools/bench/cairn-bench"
if [ ! -x "$cairnd" ] || [ ! -x "$bench" ] || [ ! -e "$build/plugins/storage-local.so" ]; then
    echo "build cairnd, cairn-bench and the storage plugins in $build first" >&2
    exit 1
fi
if [ "$with_s3" = 1 ] && { [ ! -e "$build/plugins/storage-s3.so" ] || [ ! -d "$s3rver_dir/node_modules/s3rver" ]; }; then
    echo "storage-s3.so or $s3rver_dir/node_modules/s3rver missing (npm ci there, or --no-s3)" >&2
    exit 1
fi

work="$(mktemp -d /tmp/cairn-tiered-bench-XXXXXX)"
[ -n "$out" ] || out="$work/reports"
mkdir -p "$out"
records=$((mb * 1024)) # of 1 KiB
cache_bytes=$((mb * 2 * 1048576))
[ "$cache_bytes" -ge 1073741824 ] || cache_bytes=1073741824 # the default, at least: the warm read fits

broker=""
s3rver=""
cleanup() {
    [ -z "$broker" ] || { kill "$broker" 2>/dev/null || true; wait "$broker" 2>/dev/null || true; }
    [ -z "$s3rver" ] || { kill "$s3rver" 2>/dev/null || true; wait "$s3rver" 2>/dev/null || true; }
    rm -rf "$work/data" "$work/remote" "$work/s3"
    case "$out" in "$work"/*) ;; *) rm -rf "$work" ;; esac # the reports elsewhere: nothing left to keep
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

started_count() { # how many times cairnd NAME logged its start
    if [ -e "$out/cairnd-$1.log" ]; then grep -c "cairnd started" "$out/cairnd-$1.log" || true; else echo 0; fi
}

# start_broker NAME extra-overrides...: sets broker, port, metrics_port,
# data (kept across restarts of NAME); read-ahead as $ahead says.
start_broker() {
    local name="$1"
    shift
    port=$(free_port)
    metrics_port=$(free_port)
    data="$work/data/$name"
    mkdir -p "$data"
    local args=(--override "listeners=PLAINTEXT://127.0.0.1:$port" --override "log.dirs=$data"
        --override "metrics.http.listener=127.0.0.1:$metrics_port"
        --override "plugin.path=$build/plugins" --override "remote.log.storage.system.enable=true"
        --override "remote.log.manager.task.interval.ms=500" --override "log.retention.check.interval.ms=500"
        --override "remote.log.index.file.cache.total.size.bytes=$cache_bytes"
        --override "remote.log.read.ahead.segments=$ahead")
    for kv in "$@" ${extra[@]+"${extra[@]}"}; do args+=(--override "$kv"); done
    local starts
    starts=$(started_count "$name")
    "$cairnd" "${args[@]}" >>"$out/cairnd-$name.log" 2>&1 &
    broker=$!
    for _ in $(seq 300); do
        [ "$(started_count "$name")" -gt "$starts" ] && return 0
        kill -0 "$broker" 2>/dev/null || break
        sleep 0.1
    done
    echo "cairnd ($name) did not start; see $out/cairnd-$name.log" >&2
    exit 1
}

stop_broker() {
    kill "$broker"
    wait "$broker" || true
    broker=""
}

create_topic() { # name tiered(0|1)
    local cfg=(-c "segment.bytes=$((segment_mb * 1048576))")
    [ "$2" = 0 ] || cfg+=(-c remote.storage.enable=true -c local.retention.bytes=1)
    "$build/cli/cairn" topic create "$1" --partitions 1 "${cfg[@]}" -b "127.0.0.1:$port" >/dev/null
}

produce() { # topic report
    "$bench" produce --bootstrap "127.0.0.1:$port" --topic "$1" --records "$records" --record-size 1024 \
        --partitions 1 --broker-pid "$broker" >"$out/$2.json"
}

consume() { # topic report
    "$bench" consume --bootstrap "127.0.0.1:$port" --topic "$1" --records "$records" --idle-timeout-ms 60000 \
        --broker-pid "$broker" >"$out/$2.json"
}

metric() { # name: its value on the current broker (0 when absent)
    python3 - "$metrics_port" "$1" <<'PY'
import sys, urllib.request
page = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=10).read().decode()
vals = [l.split()[-1] for l in page.splitlines() if l.startswith(sys.argv[2] + " ")]
print(int(float(vals[0])) if vals else 0)
PY
}

thread_cpu_s() { # NAME: CPU seconds of the broker's threads of that name ('' for all; 0 when none)
    python3 - "$broker" "$1" <<'PY'
import glob, os, sys
pid, name = sys.argv[1], sys.argv[2]
ticks = 0
tasks = glob.glob(f"/proc/{pid}/task/*") if name else [f"/proc/{pid}"]  # the process: exited threads too
for task in tasks:
    try:
        comm = open(f"{task}/comm").read().strip()
        fields = open(f"{task}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        continue
    if not name or comm == name:
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
print(f"{ticks / os.sysconf('SC_CLK_TCK'):.2f}")
PY
}

# Waits until the topic's local log keeps at most its active segment and
# the one just rolled, i.e. everything else is copied and deleted locally.
wait_tiered() { # topic
    local dir="$data/$1-0" deadline=$((SECONDS + 600)) n
    while :; do
        n=$(find "$dir" -maxdepth 1 -name '*.log' | wc -l)
        [ "$n" -le 2 ] && [ "$(metric cairn_remote_copy_lag_segments)" = 0 ] && return 0
        [ "$SECONDS" -lt "$deadline" ] || { echo "$1: still $n local segments after 600 s" >&2; exit 1; }
        sleep 0.5
    done
}

note() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }

# run_backend NAME plugin-overrides...: one broker with that remote store.
run_backend() {
    local name="$1" r kind
    shift
    ahead="$read_ahead"
    start_broker "$name" "$@"
    for r in $(seq "$rounds"); do
        create_topic "off-$r" 0
        create_topic "on-$r" 1
        if [ $((r % 2)) -eq 1 ]; then order="off on"; else order="on off"; fi
        for kind in $order; do
            if [ "$settle" = 1 ]; then # no copy left over from an earlier produce
                for t in $(seq "$r"); do [ "$t" = "$r" ] && [ "$kind" = on ] || wait_tiered "on-$t"; done
                sync # and no writeback of earlier produces: each starts with the disk idle
            fi
            note "$name: produce $kind-$r ($mb MB)"
            produce "$kind-$r" "$name-produce-$kind-$r"
        done
    done
    note "$name: waiting for the tiered topics to be copied"
    local copy_wait_start=$SECONDS
    for r in $(seq "$rounds"); do wait_tiered "on-$r"; done
    echo "$name copied_s_after_last_produce $((SECONDS - copy_wait_start))" >>"$out/metrics.txt"
    echo "$name copy_throttle_ms $(metric cairn_remote_copy_throttle_time_ms_total)" >>"$out/metrics.txt"
    echo "$name copier_cpu_s $(thread_cpu_s cairn-rlm-copy)" >>"$out/metrics.txt"
    echo "$name broker_cpu_s $(thread_cpu_s '')" >>"$out/metrics.txt"
    if [ "$produce_only" = 1 ]; then
        stop_broker
        return 0
    fi
    note "$name: on-1 keeps $(find "$data/on-1-0" -name '*.log' | wc -l) local segments"
    consume on-1 "$name-cold-ahead-1"
    for r in $(seq "$rounds"); do
        if [ $((r % 2)) -eq 1 ]; then order="local warm"; else order="warm local"; fi
        for kind in $order; do
            note "$name: consume $kind $r"
            if [ "$kind" = local ]; then consume off-1 "$name-local-$r"; else consume on-1 "$name-warm-$r"; fi
        done
    done
    for m in read_ahead_started read_ahead_hits cache_misses; do
        echo "$name $m $(metric "cairn_remote_${m}_total")"
    done >>"$out/metrics.txt"
    stop_broker
    # Cold reads again, each on a restarted broker (its cache starts empty),
    # without read-ahead and with it, alternating.
    for r in $(seq "$rounds"); do
        ahead=0
        start_broker "$name" "$@"
        note "$name: consume cold without read-ahead $r"
        consume on-1 "$name-cold-noahead-$r"
        stop_broker
        ahead="$read_ahead"
        start_broker "$name" "$@"
        note "$name: consume cold with read-ahead $((r + 1))"
        consume on-1 "$name-cold-ahead-$((r + 1))"
        stop_broker
    done
    # One Fetch from offset 0 on a restarted broker (cold cache, no
    # read-ahead so the bytes downloaded are the fetch's own): how long until
    # its answer, and what the broker downloaded for it; then the same Fetch
    # of the local topic.
    ahead=0
    for r in $(seq "$rounds"); do
        start_broker "$name" "$@"
        note "$name: first fetch, cold $r"
        python3 "$here/first_fetch.py" "127.0.0.1:$port" on-1 >"$out/$name-first-remote-$r.json"
        echo "$name first_fetch_downloaded_bytes_$r $(metric cairn_remote_fetch_bytes_total)" >>"$out/metrics.txt"
        python3 "$here/first_fetch.py" "127.0.0.1:$port" off-1 >"$out/$name-first-local-$r.json"
        stop_broker
    done
}

: >"$out/metrics.txt"
mkdir -p "$work/remote"
run_backend storage-local "plugins=storage-local" "plugin.storage-local.dir=$work/remote"
backends=(storage-local)
if [ "$with_s3" = 1 ]; then
    mkdir -p "$work/s3"
    node "$s3rver_dir/serve.js" "$work/s3" 0 cairn-tier AKCAIRNBENCH 'cairn/bench+secret' >"$work/s3rver.out" 2>&1 &
    s3rver=$!
    for _ in $(seq 1200); do grep -q '^listening ' "$work/s3rver.out" && break; sleep 0.1; done
    s3port=$(sed -n 's/^listening //p' "$work/s3rver.out")
    [ -n "$s3port" ] || { echo "s3rver did not start: $(cat "$work/s3rver.out")" >&2; exit 1; }
    run_backend s3rver "plugins=storage-s3" "plugin.storage-s3.bucket=cairn-tier" \
        "plugin.storage-s3.endpoint=http://127.0.0.1:$s3port" "plugin.storage-s3.path.style.access=true" \
        "plugin.storage-s3.access.key.id=AKCAIRNBENCH" "plugin.storage-s3.secret.access.key=cairn/bench+secret"
    backends+=(s3rver)
fi

python3 - "$out" "$rounds" "$produce_only" "${backends[@]}" <<'PY'
import json, statistics, sys
out, rounds, produce_only, backends = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4:]
load = lambda name: json.load(open(f"{out}/{name}.json"))
mbs = lambda names: [load(n)["mb_per_sec"] for n in names]
p99 = lambda x: (x.get("latency_ms") or {}).get("p99", float("nan"))
med = statistics.median
for b in backends:
    print(f"== {b}: {rounds} round(s), per-round values in order, median in brackets")
    prod = {k: [load(f"{b}-produce-{k}-{r}") for r in range(1, rounds + 1)] for k in ("off", "on")}
    for k in ("off", "on"):
        cells = ", ".join(f"{x['mb_per_sec']:.0f}" for x in prod[k])
        lat = ", ".join(f"{p99(x):.0f}" for x in prod[k])
        print(f"  produce, tiering {k:<3}  MB/s {cells} [{med(x['mb_per_sec'] for x in prod[k]):.0f}]"
              f"   p99 ms {lat} [{med(p99(x) for x in prod[k]):.0f}]")
    ratio = med(x["mb_per_sec"] for x in prod["on"]) / med(x["mb_per_sec"] for x in prod["off"])
    print(f"  produce on/off (medians): {ratio:.2f}")
    pairs = [on["mb_per_sec"] / off["mb_per_sec"] for on, off in zip(prod["on"], prod["off"])]
    print(f"  produce on/off per round: {', '.join(f'{x:.2f}' for x in pairs)} [{med(pairs):.2f}]")
    if produce_only:
        continue
    # The rate from the first record to the last (the client's start apart),
    # the time to the first record, and the rate from assignment.
    after = lambda names: [load(n)["mb_per_sec_after_first"] for n in names]
    local = med(after([f"{b}-local-{r}" for r in range(1, rounds + 1)]))
    rows = [("local log", [f"{b}-local-{r}" for r in range(1, rounds + 1)]),
            ("remote, warm cache", [f"{b}-warm-{r}" for r in range(1, rounds + 1)]),
            ("remote, cold, read-ahead", [f"{b}-cold-ahead-{r}" for r in range(1, rounds + 2)]),
            ("remote, cold, no read-ahead", [f"{b}-cold-noahead-{r}" for r in range(1, rounds + 1)])]
    for label, names in rows:
        v = after(names)
        first = med(load(n)["first_record_ms"] for n in names)
        print(f"  consume {label:<28} MB/s {', '.join(f'{x:.0f}' for x in v)} [{med(v):.0f}]"
              f"  ratio to local {med(v) / local:.2f}  first record {first:.0f} ms"
              f"  from assignment [{med(mbs(names)):.0f}] MB/s")
    for kind in ("remote", "local"):
        ff = [load(f"{b}-first-{kind}-{r}") for r in range(1, rounds + 1)]
        label = "remote (cold)" if kind == "remote" else "local"
        cells = ", ".join("%.0f" % x["ms"] for x in ff)
        print(f"  first Fetch from 0, {label:<14} ms {cells} [{med(x['ms'] for x in ff):.0f}]"
              f"  record bytes {med(x['record_bytes'] for x in ff):.0f}")
print(open(f"{out}/metrics.txt").read(), end="")
PY
echo "reports in $out" >&2
