#!/usr/bin/env bash
# Replication under faults, step by step (tools/chaos/chaos-replication) on
# 3 controllers and 3 brokers: with min.insync.replicas=2 and both
# followers killed, the ISR shrinks to the leader and acks=all is refused
# with NOT_ENOUGH_REPLICAS, then expands as a follower returns, nothing
# acknowledged lost; with unclean.leader.election.enable=true the checker
# reports the loss of what only the killed leader held; with it false the
# partition has no leader until that leader returns, and nothing is lost.
. "$(dirname "$0")/../cluster/lib.sh"
: "${CAIRN_CHAOS:?CAIRN_CHAOS must name the cairn-chaos binary}"
. "$(dirname "$0")/ports.sh"
pick_base_port 6

cmd="tools/chaos/chaos-replication --scenarios min-isr,unclean,clean"
grep -qxF "\$ $cmd" "$repo/docs/operations.md" || fail "docs/operations.md does not show '$cmd'"
rc=0
out="$("$repo/tools/chaos/chaos-replication" --scenarios min-isr,unclean,clean --base-port "$base_port" \
    --dir "$work/run")" || rc=$?
echo "$out"
echo "$out" | grep -q "^scenario min-isr ok .* refused=NOT_ENOUGH_REPLICAS isr_expanded=yes lost=0$" ||
    fail "min-isr: $(echo "$out" | grep '^scenario min-isr' || echo 'no result') (logs in $work/run)"
# The unclean election loses what the old leader alone acknowledged (5
# records), and the checker says so.
echo "$out" | grep -Eq "^scenario unclean ok .* reported_lost [1-5] " ||
    fail "unclean: $(echo "$out" | grep '^scenario unclean' || echo 'no result') (logs in $work/run)"
grep -q "^lost: leaderonly-" "$work/run/unclean-true.check" || fail "the checker named no lost record"
grep -qx "verdict FAIL" "$work/run/unclean-true.check" || fail "the checker did not fail the unclean topic"
echo "$out" | grep -q "^scenario clean ok offline_while_only_out_of_isr_replicas_live=yes leader_again=[456] lost=0$" ||
    fail "clean: $(echo "$out" | grep '^scenario clean' || echo 'no result') (logs in $work/run)"
grep -qx "verdict ok" "$work/run/unclean-false.check" || fail "clean: $(cat "$work/run/unclean-false.check")"
[ "$rc" = 0 ] || fail "chaos-replication exited $rc"
passed=1
echo "ok"
