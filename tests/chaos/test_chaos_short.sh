#!/usr/bin/env bash
# A short chaos run (tools/chaos/chaos-run) on 3 combined nodes with
# replication factor 1: kill -9 and restart, SIGSTOP past the session
# timeout, from a fixed seed whose schedule holds both. Nothing acknowledged
# may be lost, duplicated, reordered or invented in the full read
# afterwards, nor in what the consumer group read.
# Then a 40 s run whose one fault is a network partition (needs root,
# iptables and cgroup v2, as CI has).
. "$(dirname "$0")/../cluster/lib.sh"
: "${CAIRN_CHAOS:?CAIRN_CHAOS must name the cairn-chaos binary}"
. "$(dirname "$0")/ports.sh"
run="$repo/tools/chaos/chaos-run"
pick_base_port 3
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
out="$("$run" --seed "$seed" --seconds "$seconds" --rf 1 --base-port "$base_port" --dir "$work/run" --producers 2 --rate 30)" || rc=$?
echo "$out"
summary="$(echo "$out" | grep '^summary ')" || fail "chaos run exited $rc without a summary (logs in $work/run)"
grep -q "workload done" "$work/run/work.log" || fail "the workload did not finish: $(tail -n 3 "$work/run/work.log")"
# What the cluster holds afterwards: every acknowledged record, once, in order.
grep -qx "verdict ok" "$work/run/check-final.txt" || fail "the full read fails the check: $(cat "$work/run/check-final.txt")"
contains "$summary" " lost=0 " "summary"
contains "$summary" " dups=0 " "summary"
acked="$(echo "$summary" | sed -n 's/.* acked=\([0-9]*\) .*/\1/p')"
[ "${acked:-0}" -ge 500 ] || fail "only '${acked}' records acknowledged: $summary"
# What the group read: every acknowledged record (FindCoordinator names
# the coordinator from any broker, so the group finds it again after its
# node restarts), nothing twice, nothing out of order, nothing invented.
for k in lost duplicates out_of_order phantoms bad_values; do
    grep -Eq "(^| )$k 0( |$)" "$work/run/check-group.txt" || fail "the group's read has $k: $(cat "$work/run/check-group.txt")"
done
[ "$rc" = 0 ] || fail "chaos-run exited $rc: $summary"

# A network partition: seed 5 cuts node 2 off for 12.4 s, past the session
# timeout. The full read must still hold everything acknowledged, and the
# iptables chain and the cgroups must be gone afterwards.
cmd="tools/chaos/chaos-run --seed 5 --seconds 40 --faults partition --rf 1 --producers 2 --rate 30"
grep -qxF "\$ $cmd" "$repo/docs/operations.md" || fail "docs/operations.md does not show '$cmd'"
rc=0
out="$("$run" --seed 5 --seconds 40 --faults partition --rf 1 --producers 2 --rate 30 --base-port "$base_port" \
    --dir "$work/part")" || rc=$?
echo "$out"
summary="$(echo "$out" | grep '^summary ')" || fail "partition run exited $rc without a summary (logs in $work/part)"
contains "$summary" " partitions=1 " "partition summary"
grep -qx "verdict ok" "$work/part/check-final.txt" || fail "after a partition the full read fails: $(cat "$work/part/check-final.txt")"
# Proof that the cut held: node 2 fenced, or (when it led the quorum) an
# election without it, or node 2 itself looking for a leader.
grep -Eq "\] fencing broker 2|node 2 is prospective in epoch [1-9]|is candidate in epoch [2-9]" "$work/part"/cluster/node-*/cairnd.log ||
    fail "no node noticed that node 2 was cut off"
! iptables -S "CAIRN-CHAOS-$base_port" > /dev/null 2>&1 || fail "the iptables chain outlived the run"
! ls -d /sys/fs/cgroup/unified/cairn-chaos-"$base_port"-* /sys/fs/cgroup/cairn-chaos-"$base_port"-* > /dev/null 2>&1 ||
    fail "the cgroups outlived the run"
passed=1
echo "ok"
