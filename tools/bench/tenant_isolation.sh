#!/usr/bin/env bash
# Tenant isolation on one shared cairnd: does a tenant pushing far past its
# produce quota cost a quiet tenant anything?
#
# One cairnd with a SASL_PLAINTEXT listener (SCRAM-SHA-256) and the quota
# plugin; two tenants, the SCRAM users "quiet" and "noisy", each with a
# producer_byte_rate quota on its user (Kafka's user entity). Then:
#   1. alone:  the quiet tenant produces at a fixed rate (cairn-bench produce
#      --rate, open loop, latency from each record's due time) for --seconds.
#   2. beside: the noisy tenant starts producing at 10 times its quota (open
#      loop too: once throttled its client queue fills, so it then offers as
#      much as the broker reads); after --warmup-seconds (its burst allowance
#      spent, throttling in its steady state) the quiet tenant runs again at
#      the same rate for --seconds. The noisy tenant's rate is the growth of
#      its topic's end offsets during the quiet tenant's run, times the
#      record size.
# Prints the quiet tenant's p50/p99 and throughput in both phases with the
# ratios (beside / alone), the noisy tenant's achieved rate over its quota,
# and each goal (p99 within 20 %, throughput within 5 %, noisy within 10 %
# of its quota) as met or not. Writes every report and summary.json to --out.
#
# --interleaved PAIRS instead runs 2 x PAIRS short phases in one broker run,
# in the order A B B A A B B A ... (A: the quiet tenant alone, B: beside
# the noisy tenant, which starts and stops where the kind changes, then
# --settle-seconds pass before the next phase), each --phase-seconds long
# after a discarded warm-up run; per phase it records the quiet tenant's
# figures and each record's due and acknowledgement times
# (phase-NN.timeline.csv), the machine's busy CPU less this run's own
# processes (others' CPUs), steal, CPU and IO pressure and load average,
# and for B phases the noisy tenant's rate (its client's starts and stops
# in noisy-events.txt). tenant_interleaved.py then gives the ratio of
# medians B / A with a bootstrap interval against the noise floor: the
# same ratio with the A/B labels shuffled, and adjacent A/A and B/B phase
# pairs, and per phase where its slowest record was.
#
# usage: tools/bench/tenant_isolation.sh [--seconds 30] [--warmup-seconds 15]
#            [--long] [--quiet-rate 1000] [--record-size 1024]
#            [--quiet-quota 2097152] [--noisy-quota 2097152]
#            [--interleaved PAIRS [--phase-seconds 10] [--settle-seconds 3]
#             [--clean-cpu median]] [--broker-cpus LIST] [--client-cpus LIST]
#            [--noisy-cpus LIST]
#            [--override key=value]... [--out DIR]
# --long runs 120 s phases after a 20 s warm-up; --override is a broker
# config (e.g. plugin.quota.quota.window.num=2). --broker-cpus and
# --client-cpus pin cairnd and the clients with taskset -c (e.g. 0 and 1);
# --noisy-cpus pins the noisy tenant's client apart from the others.
# --clean-cpu: phases whose other processes used at most this many CPUs
# (default: the median phase's) are compared on their own too. Binaries:
# $CAIRND, $CAIRN, $CAIRN_BENCH, plugins in $CAIRN_PLUGIN_DIR (build/).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cairnd="${CAIRND:-$repo/build/core/server/cairnd}"
cairn="${CAIRN:-$repo/build/cli/cairn}"
bench="${CAIRN_BENCH:-$repo/build/tools/bench/cairn-bench}"
plugin_dir="${CAIRN_PLUGIN_DIR:-$repo/build/plugins}"
seconds=30 warmup=15 quiet_rate=1000 record_size=1024 quiet_quota=2097152 noisy_quota=2097152 out="" overrides=()
pairs=0 phase_seconds=10 settle=3 clean_cpu=median broker_pin=() client_pin=() noisy_pin=()
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) seconds="$2"; shift 2 ;;
        --warmup-seconds) warmup="$2"; shift 2 ;;
        --long) seconds=120; warmup=20; shift ;;
        --quiet-rate) quiet_rate="$2"; shift 2 ;;
        --record-size) record_size="$2"; shift 2 ;;
        --quiet-quota) quiet_quota="$2"; shift 2 ;;
        --noisy-quota) noisy_quota="$2"; shift 2 ;;
        --interleaved) pairs="$2"; shift 2 ;;
        --phase-seconds) phase_seconds="$2"; shift 2 ;;
        --settle-seconds) settle="$2"; shift 2 ;;
        --clean-cpu) clean_cpu="$2"; shift 2 ;;
        --broker-cpus) broker_pin=(taskset -c "$2"); shift 2 ;;
        --client-cpus) client_pin=(taskset -c "$2"); shift 2 ;;
        --noisy-cpus) noisy_pin=(taskset -c "$2"); shift 2 ;;
        --override) overrides+=(--override "$2"); shift 2 ;;
        --out) out="$2"; shift 2 ;;
        -h|--help) sed -n '2,49p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "tenant_isolation: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
for n in "$seconds" "$warmup" "$quiet_rate" "$record_size" "$quiet_quota" "$noisy_quota" "$phase_seconds" "$settle"; do
    [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "tenant_isolation: '$n' is not a positive integer" >&2; exit 2; }
done
[[ "$pairs" =~ ^[0-9]+$ ]] || { echo "tenant_isolation: --interleaved '$pairs' is not a number" >&2; exit 2; }
[[ "$clean_cpu" =~ ^([0-9]+(\.[0-9]+)?|median)$ ]] || { echo "tenant_isolation: --clean-cpu '$clean_cpu' is not a number" >&2; exit 2; }
[ ${#noisy_pin[@]} -gt 0 ] || noisy_pin=(${client_pin[@]+"${client_pin[@]}"})
for b in "$cairnd" "$cairn" "$bench"; do
    [ -x "$b" ] || { echo "tenant_isolation: $b is missing (build first)" >&2; exit 1; }
done
[ -n "$out" ] || out="$(mktemp -d "${TMPDIR:-/tmp}/cairn-tenant-isolation.XXXXXX")"
mkdir -p "$out"
data="$(mktemp -d "${TMPDIR:-/tmp}/cairn-tenant-data.XXXXXX")"
password="tenant-bench-secret"
noisy_rate=$((noisy_quota * 10 / record_size))
[ "$noisy_rate" -gt 0 ] || { echo "tenant_isolation: --noisy-quota below a tenth of a record" >&2; exit 2; }

broker_pid="" noisy_pid="" sampler_pid=""
cleanup() {
    [ -n "$sampler_pid" ] && { kill -TERM "$sampler_pid" 2>/dev/null || true; wait "$sampler_pid" 2>/dev/null || true; }
    [ -n "$noisy_pid" ] && { kill -TERM "$noisy_pid" 2>/dev/null || true; wait "$noisy_pid" 2>/dev/null || true; }
    [ -n "$broker_pid" ] && { kill -TERM "$broker_pid" 2>/dev/null || true; wait "$broker_pid" 2>/dev/null || true; }
    rm -rf "$data"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
plain_port="$(free_port)"
sasl_port="$(free_port)"
while [ "$sasl_port" = "$plain_port" ]; do sasl_port="$(free_port)"; done
plain="127.0.0.1:$plain_port"
sasl="127.0.0.1:$sasl_port"

"${broker_pin[@]}" "$cairnd" --override "listeners=PLAINTEXT://$plain,SASL_PLAINTEXT://$sasl" --override "log.dirs=$data/log" \
    --override "sasl.enabled.mechanisms=SCRAM-SHA-256" --override "plugin.path=$plugin_dir" \
    --override "plugins=quota" \
    --override "plugin.quota.entries=user=quiet:producer_byte_rate=$quiet_quota;user=noisy:producer_byte_rate=$noisy_quota" \
    "${overrides[@]}" > "$out/cairnd.log" 2>&1 &
broker_pid=$!
up=0
for _ in $(seq 1 600); do
    kill -0 "$broker_pid" 2>/dev/null || break
    if (exec 3<>"/dev/tcp/127.0.0.1/$sasl_port") 2>/dev/null; then up=1; break; fi
    sleep 0.05
done
[ "$up" = 1 ] || { echo "tenant_isolation: cairnd did not start, see $out/cairnd.log" >&2; exit 1; }
for user in quiet noisy; do
    "$cairn" user create "$user" --password "$password" -b "$plain" >> "$out/setup.log" 2>&1
done

tenant_args() { # user
    echo "--bootstrap $sasl --topic $1.events --partitions 1 --record-size $record_size" \
         "-X security.protocol=SASL_PLAINTEXT -X sasl.mechanisms=SCRAM-SHA-256 -X sasl.username=$1" \
         "-X sasl.password=$password -X client.id=$1-app"
}
end_offsets() { # topic: prints "<milliseconds since epoch> <sum of end offsets>"
    "${client_pin[@]}" "$bench" end-offsets --bootstrap "$plain" --topic "$1" 2>> "$out/bench.log" |
        python3 -c 'import json, sys; r = json.load(sys.stdin); print(r["time_ms"], r["end_offset_sum"])' \
            2>> "$out/bench.log" || true
}
quiet_run() { # phase
    local load0
    load0="$(cut -d' ' -f1 /proc/loadavg)"
    # shellcheck disable=SC2046
    "${client_pin[@]}" "$bench" produce $(tenant_args quiet) --rate "$quiet_rate" --records $((quiet_rate * seconds)) \
        --broker-pid "$broker_pid" > "$out/quiet-$1.json" 2>> "$out/bench.log" ||
        { echo "tenant_isolation: the quiet tenant's $1 run failed: $(cat "$out/quiet-$1.json")" >&2; exit 1; }
    echo "$load0 $(cut -d' ' -f1 /proc/loadavg)" > "$out/load-$1.txt"
    echo "  quiet $1: $(tr -d '\n' < "$out/quiet-$1.json" | cut -c1-200)" >&2
}

# One line of key=value: wall clock, the machine's busy CPU ticks (steal
# included: a vCPU taken by the hypervisor is as lost) and steal ticks
# (/proc/stat), CPU and IO pressure in microseconds (/proc/pressure/cpu and
# io, "-" if the kernel has none), load average, and the CPU ticks of the broker and of
# the noisy client ("-" when it is not running). Builtins only, so taking a
# snapshot starts no process of its own.
snapshot() { # noisy pid or ""
    local _cpu user nice system _idle _iowait irq softirq steal _rest psi="-" psi_io="-" load1 noisy="-" line
    local -a f
    read -r _cpu user nice system _idle _iowait irq softirq steal _rest < /proc/stat
    if [ -r /proc/pressure/cpu ]; then
        read -r _ _ _ _ line < /proc/pressure/cpu && psi="${line#total=}"
    fi
    if [ -r /proc/pressure/io ]; then
        read -r _ _ _ _ line < /proc/pressure/io && psi_io="${line#total=}"
    fi
    read -r load1 _rest < /proc/loadavg
    read -r line < "/proc/$broker_pid/stat"
    read -ra f <<< "${line##*) }"
    local broker=$((f[11] + f[12]))
    if [ -n "$1" ] && read -r line 2>/dev/null < "/proc/$1/stat"; then
        read -ra f <<< "${line##*) }"
        noisy=$((f[11] + f[12]))
    fi
    echo "wall=$EPOCHREALTIME busy=$((user + nice + system + irq + softirq + steal)) steal=$steal psi=$psi" \
         "psi_io=$psi_io load1=$load1 broker=$broker noisy=$noisy"
}
noisy_start() {
    echo "start $EPOCHREALTIME" >> "$out/noisy-events.txt"
    # shellcheck disable=SC2046
    "${noisy_pin[@]}" "$bench" produce $(tenant_args noisy) --rate "$noisy_rate" \
        --records $((noisy_rate * (2 * pairs * (phase_seconds + settle) + 3600))) \
        >> "$out/noisy.json" 2>> "$out/bench.log" &
    noisy_pid=$!
}
noisy_stop() {
    kill -0 "$noisy_pid" 2>/dev/null || { echo "tenant_isolation: the noisy tenant stopped early: $(cat "$out/noisy.json")" >&2; exit 1; }
    echo "stop $EPOCHREALTIME" >> "$out/noisy-events.txt"
    kill -TERM "$noisy_pid"; wait "$noisy_pid" 2>/dev/null || true; noisy_pid=""
}
noisy_offsets() { # file: appends "<ms> <end offset sum>" of noisy.events
    local t off
    for _ in $(seq 1 60); do # its topic may still be in creation on a slow machine
        read -r t off <<< "$(end_offsets noisy.events)"
        [[ "${off:-}" =~ ^[0-9]+$ ]] && { echo "$t $off" >> "$1"; return 0; }
        sleep 1
    done
    echo "tenant_isolation: no end offsets of noisy.events, see $out/bench.log" >&2; exit 1
}
phase_run() { # name
    # shellcheck disable=SC2046
    "${client_pin[@]}" "$bench" produce $(tenant_args quiet) --rate "$quiet_rate" \
        --records $((quiet_rate * phase_seconds)) --broker-pid "$broker_pid" --timeline "$out/$1.timeline.csv" \
        > "$out/$1.json" 2>> "$out/bench.log" ||
        { echo "tenant_isolation: the quiet tenant's $1 run failed: $(cat "$out/$1.json")" >&2; exit 1; }
}

if [ "$pairs" -gt 0 ]; then
    phase_run warmup # the first run on a fresh broker creates its topic; not counted
    for ((i = 0; i < 2 * pairs; i++)); do
        name="$(printf 'phase-%02d' "$i")"
        if [ $((i % 4)) = 0 ] || [ $((i % 4)) = 3 ]; then kind=A; else kind=B; fi
        if [ "$kind" = B ] && [ -z "$noisy_pid" ]; then
            noisy_start
            sleep "$settle" # its burst allowance spent, it is throttled
        elif [ "$kind" = A ] && [ -n "$noisy_pid" ]; then
            noisy_stop
            sleep "$settle" # its last admitted requests are appended
        fi
        [ "$kind" = B ] && noisy_offsets "$out/$name.noisy"
        snapshot "$noisy_pid" > "$out/$name.snap"
        phase_run "$name"
        snapshot "$noisy_pid" >> "$out/$name.snap"
        if [ "$kind" = B ]; then
            noisy_offsets "$out/$name.noisy"
            kill -0 "$noisy_pid" 2>/dev/null || { echo "tenant_isolation: the noisy tenant stopped: $(cat "$out/noisy.json")" >&2; exit 1; }
        fi
        echo "  $name $kind: $(tr -d '\n' < "$out/$name.json" | cut -c1-160)" >&2
    done
    [ -z "$noisy_pid" ] || noisy_stop
    echo "quiet tenant: $quiet_rate records/s of $record_size B (quota $quiet_quota B/s); noisy tenant: quota" \
         "$noisy_quota B/s, offered $noisy_rate records/s (10x); $((2 * pairs)) phases of $phase_seconds s," \
         "A B B A order, $settle s settle"
    python3 "$here/tenant_interleaved.py" analyse "$out" "$noisy_quota" "$record_size" --clean-cpu "$clean_cpu"
    echo "results in $out" >&2
    exit 0
fi

quiet_run alone

# The noisy tenant: far more records than it can send, stopped once the
# quiet tenant's second run is over.
# shellcheck disable=SC2046
"${noisy_pin[@]}" "$bench" produce $(tenant_args noisy) --rate "$noisy_rate" --records $((noisy_rate * (warmup + seconds + 3600))) \
    > "$out/noisy.json" 2>> "$out/bench.log" &
noisy_pid=$!
# The noisy tenant's end offsets about every second, to show how its rate
# moves within the quota's window.
"${client_pin[@]}" "$bench" end-offsets --bootstrap "$plain" --topic noisy.events --every-ms 1000 \
    > "$out/noisy-timeline.jsonl" 2>> "$out/bench.log" &
sampler_pid=$!
sleep "$warmup" # the noisy tenant's burst allowance is spent and it is throttled
kill -0 "$noisy_pid" 2>/dev/null || { echo "tenant_isolation: the noisy tenant stopped: $(cat "$out/noisy.json")" >&2; exit 1; }
for _ in $(seq 1 60); do # the noisy tenant's topic may still be in creation on a slow machine
    read -r t0 off0 <<< "$(end_offsets noisy.events)"
    [[ "${off0:-}" =~ ^[0-9]+$ ]] && break
    sleep 1
done
quiet_run beside
read -r t1 off1 <<< "$(end_offsets noisy.events)"
[[ "${off0:-}" =~ ^[0-9]+$ && "${off1:-}" =~ ^[0-9]+$ ]] ||
    { echo "tenant_isolation: no end offsets of noisy.events, see $out/bench.log" >&2; exit 1; }
kill -0 "$noisy_pid" 2>/dev/null || { echo "tenant_isolation: the noisy tenant stopped early: $(cat "$out/noisy.json")" >&2; exit 1; }
kill -TERM "$sampler_pid"; wait "$sampler_pid" 2>/dev/null || true; sampler_pid=""
kill -TERM "$noisy_pid"; wait "$noisy_pid" 2>/dev/null || true; noisy_pid=""

python3 - "$out" "$t0" "$off0" "$t1" "$off1" "$record_size" "$noisy_quota" "$noisy_rate" "$quiet_quota" <<'EOF'
import json, sys
out, t0, off0, t1, off1, size, quota, noisy_rate, quiet_quota = sys.argv[1:]
t0, t1, off0, off1, size, quota = int(t0) / 1e3, int(t1) / 1e3, int(off0), int(off1), int(size), int(quota)
alone = json.load(open(f"{out}/quiet-alone.json"))
beside = json.load(open(f"{out}/quiet-beside.json"))
loads = {p: open(f"{out}/load-{p}.txt").read().split() for p in ("alone", "beside")}
noisy_bytes_per_sec = (off1 - off0) * size / (t1 - t0)
# Rate between successive samples (about 1 s apart) within the quiet run.
points = [(r["time_ms"] / 1e3, r["end_offset_sum"])
          for r in (json.loads(line) for line in open(f"{out}/noisy-timeline.jsonl") if line.strip())]
steps = [((b[1] - a[1]) * size / (b[0] - a[0])) / quota for a, b in zip(points, points[1:])
         if b[0] > a[0] and a[0] >= t0 - 0.5 and b[0] <= t1 + 0.5]
s = {
    "quiet_rate": alone["rate"]["target"], "record_size": size, "quiet_quota": int(quiet_quota),
    "noisy_quota": quota, "noisy_offered_records_per_sec": int(noisy_rate),
    "quiet_alone": {"p50_ms": alone["latency_ms"]["p50"], "p99_ms": alone["latency_ms"]["p99"],
                    "msgs_per_sec": alone["msgs_per_sec"], "load": loads["alone"]},
    "quiet_beside": {"p50_ms": beside["latency_ms"]["p50"], "p99_ms": beside["latency_ms"]["p99"],
                     "msgs_per_sec": beside["msgs_per_sec"], "load": loads["beside"]},
    "noisy_bytes_per_sec": noisy_bytes_per_sec, "noisy_seconds": t1 - t0,
    "noisy_per_second_over_quota": [round(x, 3) for x in steps],
}
s["p99_ratio"] = s["quiet_beside"]["p99_ms"] / s["quiet_alone"]["p99_ms"]
s["p50_ratio"] = s["quiet_beside"]["p50_ms"] / s["quiet_alone"]["p50_ms"]
s["throughput_ratio"] = s["quiet_beside"]["msgs_per_sec"] / s["quiet_alone"]["msgs_per_sec"]
s["noisy_over_quota"] = noisy_bytes_per_sec / quota
s["goals"] = {"p99_within_20pct": abs(s["p99_ratio"] - 1) < 0.20,
              "throughput_within_5pct": abs(s["throughput_ratio"] - 1) < 0.05,
              "noisy_within_10pct_of_quota": abs(s["noisy_over_quota"] - 1) < 0.10}
json.dump(s, open(f"{out}/summary.json", "w"), indent=1)
a, b = s["quiet_alone"], s["quiet_beside"]
met = lambda g: "met" if s["goals"][g] else "NOT met"
print(f"quiet tenant: {s['quiet_rate']} records/s of {size} B (quota {int(quiet_quota)} B/s); "
      f"noisy tenant: quota {quota} B/s, offered {int(noisy_rate)} records/s (10x)")
print("| quiet tenant | alone | beside noisy | beside / alone |")
print("|---|---|---|---|")
print(f"| p50 ms | {a['p50_ms']:.2f} | {b['p50_ms']:.2f} | {s['p50_ratio']:.2f} |")
print(f"| p99 ms | {a['p99_ms']:.2f} | {b['p99_ms']:.2f} | {s['p99_ratio']:.2f} ({met('p99_within_20pct')}: within 20 %) |")
print(f"| records/s | {a['msgs_per_sec']:.0f} | {b['msgs_per_sec']:.0f} | {s['throughput_ratio']:.3f} ({met('throughput_within_5pct')}: within 5 %) |")
print(f"| load average (start end) | {' '.join(a['load'])} | {' '.join(b['load'])} | |")
print(f"noisy tenant: {noisy_bytes_per_sec:.0f} B/s over {s['noisy_seconds']:.1f} s = {s['noisy_over_quota']:.3f} x its quota "
      f"({met('noisy_within_10pct_of_quota')}: within 10 %)")
if steps:
    print(f"noisy tenant, about every second during that time, x its quota: min {min(steps):.2f}, max {max(steps):.2f}, "
          f"seconds above 2x: {sum(1 for x in steps if x > 2)} of {len(steps)} (timeline: noisy-timeline.jsonl)")
EOF
echo "results in $out" >&2
