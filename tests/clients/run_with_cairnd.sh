#!/usr/bin/env bash
# Runs a client test against a fresh cairnd: starts the broker on a free
# loopback port with a temporary data dir, runs the command with every
# "{bootstrap}" argument replaced by host:port, stops the broker, removes
# the dir (kept when the command failed), and exits with the command's
# status (77 means skipped).
#
# usage: tests/clients/run_with_cairnd.sh CAIRND [--override k=v ...] -- COMMAND [ARGS...]
set -euo pipefail

cairnd="${1:?usage: run_with_cairnd.sh CAIRND [--override k=v ...] -- COMMAND [ARGS...]}"
shift
overrides=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    overrides+=("$1")
    shift
done
[ "${1:-}" = "--" ] || { echo "missing -- before the command" >&2; exit 2; }
shift
[ -x "$cairnd" ] || { echo "cairnd not found at $cairnd" >&2; exit 2; }

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
dir="$(mktemp -d /tmp/cairn-client-test.XXXXXX)"
bootstrap="127.0.0.1:$port"
"$cairnd" --override "listeners=PLAINTEXT://$bootstrap" --override "advertised.listeners=PLAINTEXT://$bootstrap" \
    --override "log.dirs=$dir/data" --override "num.partitions=4" ${overrides[@]+"${overrides[@]}"} \
    >"$dir/cairnd.log" 2>&1 &
pid=$!

stop_broker() {
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}
trap stop_broker EXIT

ready=0
for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || break
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then ready=1; break; fi
    sleep 0.1
done
if [ "$ready" != 1 ]; then
    echo "cairnd did not start; last lines of $dir/cairnd.log:" >&2
    tail -n 20 "$dir/cairnd.log" >&2
    exit 1
fi

args=()
for a in "$@"; do args+=("${a//\{bootstrap\}/$bootstrap}"); done
status=0
"${args[@]}" || status=$?
stop_broker
trap - EXIT
if [ "$status" = 0 ] || [ "$status" = 77 ]; then
    rm -rf "$dir"
else
    echo "client test failed (status $status); broker log kept in $dir/cairnd.log; last lines:" >&2
    tail -n 20 "$dir/cairnd.log" >&2
fi
exit "$status"
