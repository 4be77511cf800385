#!/usr/bin/env bash
# Runs one librdkafka suite test under gdb with one of the scripts here, to
# force the client-side race that test depends on (see docs/compatibility.md).
#
# usage: tools/conformance/races/run-under-gdb.sh BOOTSTRAP TEST GDB_SCRIPT [SECONDS]
#   e.g. run-under-gdb.sh 127.0.0.1:9092 0061 consumer-lag-window.gdb
#        DELAY_MS=80 run-under-gdb.sh 127.0.0.1:9092 0102 heartbeat-deadline.gdb
# The suite must be built (tools/conformance/run.sh --prepare-only).
set -euo pipefail

[ $# -ge 3 ] || { sed -n '5,8p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
bootstrap="$1"; test_number="$2"; script="$3"; seconds="${4:-90}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
suite="$(ls -d "$here"/../work/librdkafka-*/tests 2>/dev/null | head -n1)"
[ -x "$suite/test-runner" ] || { echo "suite not built under $here/../work" >&2; exit 1; }
case "$script" in /*) ;; *) script="$here/$script" ;; esac

conf="$(mktemp /tmp/cairn-race-conf.XXXXXX)"
trap 'rm -f "$conf"' EXIT
printf 'metadata.broker.list=%s\n' "$bootstrap" >"$conf"

cd "$suite"
# gdb reads commands from the pipe; the inferior runs in the background
# (non-stop mode) until the pipe says kill after $seconds.
(sleep "$seconds"; echo kill; echo quit) |
    LD_LIBRARY_PATH="$suite/../src:$suite/../src-cpp" RDKAFKA_TEST_CONF="$conf" \
    TESTS="$test_number" TEST_KAFKA_VERSION=3.9.0 \
    gdb -q -nx -x "$script" --args ./test-runner -L -V 3.9.0
