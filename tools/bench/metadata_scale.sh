#!/usr/bin/env bash
# Metadata scale: creates N partitions on a local cluster of one controller
# and B brokers (tools/cairn-cluster; brokers apart from the controller, so
# that each process's start-up and RSS are its own), then restarts the first
# broker and the controller and times how long each takes to serve them all
# again.
#
# usage: tools/bench/metadata_scale.sh [--topics T] [--partitions P]
#            [--replication-factor R] [--brokers B] [--batch K]
#            [--snapshot-interval-ms MS] [--wait-timeout-ms MS] [--base-port PORT]
#            [--keep] [--out DIR] [--prop key=value]... [--list-rounds R]
#
# Defaults: 1000 topics x 100 partitions (100,000), RF 1, 1 broker, 100
# topics per CreateTopics. RF R needs --brokers R or more.
# Reports (JSON on stdout, also DIR/scale.json when --out is given):
#  - create_seconds: the CreateTopics batches; created_until_led_seconds: from
#    the first batch until an all-topics Metadata lists every partition with
#    a leader;
#  - the controller's __cluster_metadata-0 log bytes and newest snapshot
#    (.checkpoint) bytes, the same for the broker's copy;
#  - broker restart (SIGTERM, start on its data): seconds from exec until the
#    client listener accepts (a broker opens it once registered and unfenced,
#    i.e. after its metadata load and log load) and until Metadata lists
#    every partition led; the broker's own "loaded" log lines; its VmRSS and
#    VmHWM and open descriptors then (and the descriptors after the
#    creation); the seconds its clean stop took;
#  - the same for a controller restart, and the controller's VmRSS/VmHWM;
#  - with --list-rounds R (default 0): R rounds, the order alternating, of
#    `cairn topic list` and `kcat -L` against the brokers after the creation
#    (each an all-topics Metadata, printed to a file whose topic count is
#    checked), with each run's seconds and the medians.
# The broker waits for a snapshot (metadata.log.max.snapshot.interval.ms,
# default here 2000) before its restart, so the restart loads a snapshot
# rather than replaying the whole log. The script exits non-zero when a
# creation fails or the partitions are not all back, each led, within
# --wait-timeout-ms (default 1800000) after a restart.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
export CAIRND="${CAIRND:-$repo/build/core/server/cairnd}"
export CAIRN="${CAIRN:-$repo/build/cli/cairn}"
bench="${CAIRN_BENCH:-$repo/build/tools/bench/cairn-bench}"
cluster="$repo/tools/cairn-cluster"
topics=1000 partitions=100 rf=1 brokers=1 batch=100 snapshot_ms=2000 wait_ms=1800000 base_port="" keep=0 out="" list_rounds=0
props=()
while [ $# -gt 0 ]; do
    case "$1" in
        --topics) topics="$2"; shift ;;
        --partitions) partitions="$2"; shift ;;
        --replication-factor) rf="$2"; shift ;;
        --brokers) brokers="$2"; shift ;;
        --batch) batch="$2"; shift ;;
        --snapshot-interval-ms) snapshot_ms="$2"; shift ;;
        --wait-timeout-ms) wait_ms="$2"; shift ;;
        --base-port) base_port="$2"; shift ;;
        --keep) keep=1 ;;
        --list-rounds) list_rounds="$2"; shift ;;
        --out) out="$2"; shift ;;
        --prop) props+=(--prop "$2"); shift ;;
        -h|--help) sed -n '2,36p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
[ -x "$CAIRND" ] || { echo "cairnd not found at $CAIRND" >&2; exit 1; }
[ -x "$bench" ] || { echo "cairn-bench not found at $bench (set CAIRN_BENCH)" >&2; exit 1; }
[ "$brokers" -ge "$rf" ] || { echo "--replication-factor $rf needs --brokers $rf or more" >&2; exit 2; }
own_out=0
[ -n "$out" ] || { out="$(mktemp -d /tmp/cairn-scale.XXXXXX)"; own_out=1; }
mkdir -p "$out"
dir="$out/cluster"

# A base port whose node ports (P+1.., P+101..) are all free.
if [ -z "$base_port" ]; then
    base_port="$(python3 - "$brokers" <<'EOF'
import random, socket, sys
n = 1 + int(sys.argv[1])
for _ in range(200):
    p = random.randrange(20000, 30000, 10)
    try:
        for port in [p + i for i in range(1, n + 1)] + [p + 100 + i for i in range(1, n + 1)]:
            s = socket.socket(); s.bind(("127.0.0.1", port)); s.close()
    except OSError:
        continue
    print(p); break
EOF
)"
fi
broker_ids=$(seq 2 $((1 + brokers)))
bootstrap=""
for b in $broker_ids; do bootstrap="${bootstrap:+$bootstrap,}127.0.0.1:$((base_port + b))"; done

cleanup() {
    [ -f "$dir/cluster.env" ] && "$cluster" down --dir "$dir" >/dev/null 2>&1 || true
    if [ "$keep" = 1 ]; then echo "cluster kept in $dir" >&2
    elif [ "$own_out" = 1 ]; then rm -rf "$out"
    else rm -rf "$dir"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now() { date +%s.%N; }
since() { python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 3))" "$1" "$(now)"; }
pid_of() { cat "$dir/node-$1/pid"; }
mem() { # node -> {"vm_rss_kib": .., "vm_hwm_kib": ..}
    awk '/^VmRSS:/ { r = $2 } /^VmHWM:/ { h = $2 } END { printf "{\"vm_rss_kib\": %d, \"vm_hwm_kib\": %d}", r, h }' \
        "/proc/$(pid_of "$1")/status"
}
fds() { ls "/proc/$(pid_of "$1")/fd" | wc -l; }
# A broker's copy of the metadata log is its Raft observer log, beside its partitions.
meta_dir() { if [ "$1" = 1 ]; then echo "$dir/node-1/data/__cluster_metadata-0"; else echo "$dir/node-$1/data/raft-quorum/__cluster_metadata-0"; fi; }
log_bytes() { find "$(meta_dir "$1")" -name '*.log' -printf '%s\n' 2>/dev/null | awk '{ s += $1 } END { printf "%.0f", s }'; }
newest_snapshot() { find "$(meta_dir "$1")" -name '*.checkpoint' -printf '%f\n' 2>/dev/null | sort | tail -n 1; }
snapshot_bytes() {
    local s; s="$(newest_snapshot "$1")"
    if [ -n "$s" ]; then stat -c %s "$(meta_dir "$1")/$s"; else echo 0; fi
}
wait_all() { # -> wait-partitions JSON
    "$bench" wait-partitions --bootstrap "$bootstrap" --topic scale --topics "$topics" --partitions "$partitions" \
        --idle-timeout-ms "$wait_ms" 2>>"$out/bench.log"
}
# Start a node and return once its port accepts; prints seconds since exec.
restart_node() { # node
    local t0 port
    t0="$(now)"
    "$cluster" start "$1" --dir "$dir" >/dev/null
    since "$t0"
}

echo "cluster: 1 controller + $brokers broker(s) on base port $base_port in $dir" >&2
"$cluster" up --dir "$dir" --controllers 1 --brokers "$brokers" --base-port "$base_port" \
    --prop "offsets.topic.replication.factor=1" --prop "num.partitions=1" \
    --prop "metadata.log.max.snapshot.interval.ms=$snapshot_ms" "${props[@]}" >"$out/up.log"

total=$((topics * partitions))
echo "creating $topics topics x $partitions partitions (RF $rf) = $total" >&2
t_create="$(now)"
create="$("$bench" create-topics --bootstrap "$bootstrap" --topic scale --topics "$topics" \
    --partitions "$partitions" --replication-factor "$rf" --batch "$batch" 2>>"$out/bench.log")"
led="$(wait_all)"
created_until_led="$(since "$t_create")"
echo "created: $create; led after $created_until_led s" >&2

# `cairn topic list` against `kcat -L`, both an all-topics Metadata; the
# order alternates each round, and each output must name every topic.
list_one() { # tool -> seconds
    local t0 file="$out/list.$1" n
    t0="$(now)"
    if [ "$1" = cairn ]; then "$CAIRN" topic list -b "$bootstrap" >"$file"
    else "$kcat" -L -b "$bootstrap" >"$file"; fi
    since "$t0"
    n="$(grep -c 'scale-' "$file" || true)"
    [ "$n" -ge "$topics" ] || { echo "$1 listed $n of $topics topics" >&2; exit 1; }
}
topic_list="null"
if [ "$list_rounds" -gt 0 ]; then
    kcat="$(command -v kcat || true)"
    cairn_s=() kcat_s=()
    for r in $(seq 1 "$list_rounds"); do
        order="cairn kcat"; [ $((r % 2)) = 0 ] && order="kcat cairn"
        for tool in $order; do
            [ "$tool" = kcat ] && [ -z "$kcat" ] && continue
            t="$(list_one "$tool")"
            if [ "$tool" = cairn ]; then cairn_s+=("$t"); else kcat_s+=("$t"); fi
        done
    done
    topic_list="$(python3 -c '
import json, statistics, sys
c = [float(x) for x in sys.argv[1].split()]
k = [float(x) for x in sys.argv[2].split()]
print(json.dumps({"cairn_seconds": c, "kcat_seconds": k, "cairn_median": statistics.median(c),
                  "kcat_median": statistics.median(k) if k else None}))' "${cairn_s[*]}" "${kcat_s[*]:-}")"
    echo "topic list: $topic_list" >&2
fi

# Let the broker's loader snapshot everything, so its restart loads one:
# wait until its newest snapshot stays the same for a few intervals.
settle=$((snapshot_ms / 1000 * 2 + 3))
last="" stable_since=$SECONDS deadline=$((SECONDS + 300))
while [ $SECONDS -lt $deadline ]; do
    s="$(newest_snapshot 2)"
    [ "$s" != "$last" ] && { last="$s"; stable_since=$SECONDS; }
    [ -n "$s" ] && [ $((SECONDS - stable_since)) -ge "$settle" ] && break
    sleep 0.2
done
controller_mem_after_create="$(mem 1)"
broker_mem_after_create="$(mem 2)"
broker_fds_after_create="$(fds 2)"
sizes="{\"controller_log_bytes\": $(log_bytes 1), \"controller_snapshot\": \"$(newest_snapshot 1)\", \"controller_snapshot_bytes\": $(snapshot_bytes 1), \"broker_log_bytes\": $(log_bytes 2), \"broker_snapshot\": \"$(newest_snapshot 2)\", \"broker_snapshot_bytes\": $(snapshot_bytes 2)}"
partition_dirs="$(find "$dir/node-2/data" -maxdepth 1 -type d -name 'scale-*' | wc -l)"
echo "sizes: $sizes; broker partition dirs: $partition_dirs" >&2

echo "restarting the broker" >&2
t_stop="$(now)"
"$cluster" stop 2 --dir "$dir" >/dev/null
broker_stop="$(since "$t_stop")"
lines_before="$(wc -l <"$dir/node-2/cairnd.log")"
broker_listen="$(restart_node 2)"
t_led="$(now)"
broker_led_json="$(wait_all)"
broker_led="$(python3 -c "import sys; print(round(float(sys.argv[1]) + float(sys.argv[2]), 3))" "$broker_listen" "$(since "$t_led")")"
broker_mem="$(mem 2)"
broker_fds="$(fds 2)"
broker_log="$(tail -n +"$((lines_before + 1))" "$dir/node-2/cairnd.log" | { grep -Ei 'loaded|recovered|registered|started:|hosting|started for' || true; } | head -n 12 |
    sed 's/\\/\\\\/g; s/"/\\"/g' | python3 -c 'import json, sys; print(json.dumps([l.rstrip() for l in sys.stdin]))')"
echo "broker: stopped in $broker_stop s; listening after $broker_listen s, all led after $broker_led s, memory $broker_mem, $broker_fds descriptors" >&2

echo "restarting the controller" >&2
"$cluster" stop 1 --dir "$dir" >/dev/null
controller_listen="$(restart_node 1)"
t_led="$(now)"
wait_all >/dev/null
controller_led="$(python3 -c "import sys; print(round(float(sys.argv[1]) + float(sys.argv[2]), 3))" "$controller_listen" "$(since "$t_led")")"
controller_mem="$(mem 1)"
echo "controller: listening after $controller_listen s, all led after $controller_led s, memory $controller_mem" >&2

cat <<EOF | python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)))' | tee "$out/scale.json"
{"topics": $topics, "partitions_per_topic": $partitions, "partitions": $total, "replication_factor": $rf,
 "brokers": $brokers, "create": $create, "created_until_led_seconds": $created_until_led,
 "metadata": $sizes, "broker_partition_dirs": $partition_dirs, "topic_list": $topic_list,
 "controller_memory_after_create": $controller_mem_after_create, "broker_memory_after_create": $broker_mem_after_create,
 "broker_fds_after_create": $broker_fds_after_create,
 "broker_restart": {"stop_seconds": $broker_stop, "fds": $broker_fds, "listening_seconds": $broker_listen, "all_led_seconds": $broker_led, "memory": $broker_mem,
                    "wait": $broker_led_json, "log": $broker_log},
 "controller_restart": {"listening_seconds": $controller_listen, "all_led_seconds": $controller_led,
                        "memory": $controller_mem}}
EOF
