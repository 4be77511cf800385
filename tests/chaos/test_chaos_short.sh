#!/usr/bin/env bash
# A short chaos run (tools/chaos/chaos-run) on 3 combined nodes with
# replication factor 1: kill -9 and restart, SIGSTOP past the session
# timeout, from a fixed seed whose schedule holds both. Nothing acknowledged
# may be lost, duplicated, reordered or invented, in the group's read or in
# the full read afterwards.
. "$(dirname "$0")/../cluster/lib.sh"
: "${CAIRN_CHAOS:?CAIRN_CHAOS must name the cairn-chaos binary}"
run="$repo/tools/chaos/chaos-run"
seed=3 seconds=60

# The commands docs/operations.md shows are the ones run here.
for cmd in "tools/chaos/chaos-run --plan-only --seed $seed --seconds $seconds" \
           "tools/chaos/chaos-run --seed $seed --seconds $seconds --rf 1 --producers 2 --rate 30"; do
    grep -qxF "\$ $cmd" "$repo/docs/operations.md" || fail "docs/operations.md does not show '$cmd'"
done
plan="$("$run" --plan-only --seed "$seed" --seconds "$seconds")"
contains "$plan" " kill " "the schedule of seed $seed"
contains "$plan" " pause " "the schedule of seed $seed"
[ "$plan" = "$("$run" --plan-only --seed "$seed" --seconds "$seconds")" ] || fail "one seed, two schedules"

rc=0
out="$("$run" --seed "$seed" --seconds "$seconds" --rf 1 --base-port 25100 --dir "$work/run" --producers 2 --rate 30)" || rc=$?
echo "$out"
[ "$rc" = 0 ] || fail "chaos run exited $rc (logs in $work/run)"
summary="$(echo "$out" | grep '^summary ')"
contains "$summary" " lost=0 " "summary"
contains "$summary" " dups=0 " "summary"
acked="$(echo "$summary" | sed -n 's/.* acked=\([0-9]*\) .*/\1/p')"
[ "${acked:-0}" -ge 500 ] || fail "only '${acked}' records acknowledged: $summary"
passed=1
echo "ok"
