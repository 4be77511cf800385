#!/usr/bin/env bash
# Runs libFuzzer targets two at a time (one per core), each for the same
# number of seconds it would get alone; fails if any of them fails, after
# printing that fuzzer's output.
# usage: tests/fuzz/run-pairs.sh BUILD_DIR SECONDS target:corpus-dir ...
set -u
build="$1"
seconds="$2"
shift 2
failed=0
run_one() {
    local target="${1%%:*}" corpus="${1#*:}"
    "$build/tests/fuzz/$target" -max_total_time="$seconds" "$build/$corpus" > "$build/$target.log" 2>&1
}
report() {
    local spec="$1" rc="$2" target="${1%%:*}"
    if [ "$rc" -ne 0 ]; then
        echo "== $target failed (exit $rc):"
        cat "$build/$target.log"
        failed=1
    else
        echo "== $target: $(grep -E '^Done|^#[0-9]+.*DONE' "$build/$target.log" | tail -1)"
    fi
}
while [ $# -gt 0 ]; do
    first="$1"
    second="${2:-}"
    shift
    [ -n "$second" ] && shift
    run_one "$first" &
    pid_first=$!
    if [ -n "$second" ]; then
        run_one "$second" &
        pid_second=$!
    fi
    wait "$pid_first"
    report "$first" $?
    if [ -n "$second" ]; then
        wait "$pid_second"
        report "$second" $?
    fi
done
exit "$failed"
