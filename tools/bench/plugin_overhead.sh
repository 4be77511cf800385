#!/usr/bin/env bash
# Produce throughput of cairnd with and without plugins, alternating
# configurations run by run (the order rotates every round) on fresh data
# directories, so machine noise spreads evenly over all of them.
#
# usage: tools/bench/plugin_overhead.sh [--build DIR] [--rounds N] [--records N] [--out DIR]
#
# Configurations: none; audit+quota (quota entries that never throttle the
# bench client, audit to a file); audit+quota+test_authz (an authorizer that
# allows everything, so every Produce also makes an audited decision).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="$repo/build"
rounds=6
records=1000000
out=""
while [ $# -gt 0 ]; do
    case "$1" in
        --build) build="$2"; shift ;;
        --rounds) rounds="$2"; shift ;;
        --records) records="$2"; shift ;;
        --out) out="$2"; shift ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
cairnd="$build/core/server/cairnd"
bench="$build/tools/bench/cairn-bench"
[ -x "$cairnd" ] && [ -x "$bench" ] || { echo "build cairnd and cairn-bench in $build first" >&2; exit 1; }
[ -n "$out" ] || out="$(mktemp -d /tmp/cairn-plugin-overhead.XXXXXX)"
mkdir -p "$out"

broker_pid=""
data=""
cleanup() {
    if [ -n "$broker_pid" ]; then kill -TERM "$broker_pid" 2>/dev/null || true; wait "$broker_pid" 2>/dev/null || true; fi
    [ -n "$data" ] && rm -rf "$data"
    return 0
}
trap cleanup EXIT

configs=(none audit_quota audit_quota_authz)
plugin_args() {
    local cfg="$1" dir="$2"
    case "$cfg" in
        none) ;;
        audit_quota)
            echo "--override plugin.path=$build/plugins --override plugins=audit,quota" \
                 "--override plugin.audit.file.path=$dir/audit.log" \
                 "--override plugin.quota.entries=client-id=<default>:producer_byte_rate=100000000000" ;;
        audit_quota_authz)
            echo "--override plugin.path=$build/plugins:$build/tests/plugins --override plugins=audit,quota,test_authz" \
                 "--override plugin.audit.file.path=$dir/audit.log" \
                 "--override plugin.quota.entries=client-id=<default>:producer_byte_rate=100000000000" ;;
    esac
}

run_one() { # config round
    local cfg="$1" round="$2" port
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
    data="$(mktemp -d /tmp/cairn-overhead-data.XXXXXX)"
    # shellcheck disable=SC2046
    "$cairnd" --override "listeners=PLAINTEXT://127.0.0.1:$port" --override "log.dirs=$data/data" \
        --override "num.partitions=1" --override "auto.create.topics.enable=true" \
        $(plugin_args "$cfg" "$data") >>"$out/cairnd.log" 2>&1 &
    broker_pid=$!
    for _ in $(seq 1 200); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done
    "$bench" produce --bootstrap "127.0.0.1:$port" --topic bench --records "$records" --record-size 1024 \
        --partitions 1 --broker-pid "$broker_pid" >"$out/$cfg-$round.json" 2>>"$out/bench.log" || true
    kill -TERM "$broker_pid"; wait "$broker_pid" || true
    broker_pid=""
    rm -rf "$data"; data=""
    echo "  round $round $cfg: $(cat "$out/$cfg-$round.json" | tr -d '\n' | cut -c1-160)" >&2
}

for round in $(seq 1 "$rounds"); do
    n=${#configs[@]}
    for k in $(seq 0 $((n - 1))); do run_one "${configs[$(((k + round) % n))]}" "$round"; done
done
echo "results in $out" >&2
