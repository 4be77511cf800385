#!/usr/bin/env bash
# A short chaos run (tools/chaos/chaos-run) with replication: topic of
# replication factor 3 and min.insync.replicas=2 on 3 combined nodes,
# idempotent acks=all producers and a transactional producer (two
# transactions committed in three, one aborted), a pause past the session
# timeout and a kill -9 (seed 3). Every acknowledged and committed record
# is read back once and in order, no aborted record is read (full read and
# read_committed group), no transaction ends fatally (--strict-txn), the
# paused node leaves an ISR and every ISR is whole again afterwards.
. "$(dirname "$0")/../cluster/lib.sh"
: "${CAIRN_CHAOS:?CAIRN_CHAOS must name the cairn-chaos binary}"
. "$(dirname "$0")/ports.sh"
pick_base_port 3

cmd="tools/chaos/chaos-run --seed 3 --seconds 45 --rf 3 --min-insync 2 --txn-producers 1 --producers 2 --rate 30 --strict-txn"
grep -qxF "\$ $cmd" "$repo/docs/operations.md" || fail "docs/operations.md does not show '$cmd'"
rc=0
out="$("$repo/tools/chaos/chaos-run" --seed 3 --seconds 45 --rf 3 --min-insync 2 --txn-producers 1 --producers 2 \
    --rate 30 --strict-txn --base-port "$base_port" --dir "$work/run")" || rc=$?
echo "$out"
summary="$(echo "$out" | grep '^summary ')" || fail "chaos run exited $rc without a summary (logs in $work/run)"
contains "$summary" " kills=1 pauses=1 " "summary"
for f in check-final check-group; do
    grep -qx "verdict ok" "$work/run/$f.txt" || fail "$f: $(cat "$work/run/$f.txt")"
done
for k in lost=0 dups=0 out_of_order=0 phantoms=0 group_lost=0 group_dups=0 aborted_read=0 group_aborted_read=0 \
    isr_shrunk=1/1 isr_whole=yes txn_fatal=0; do
    contains "$summary" " $k" "summary"
done
acked="$(echo "$summary" | sed -n 's/.* acked=\([0-9]*\) .*/\1/p')"
aborted="$(echo "$summary" | sed -n 's/.* aborted=\([0-9]*\) .*/\1/p')"
committed="$(echo "$summary" | sed -n 's/.* committed_txn_records=\([0-9]*\).*/\1/p')"
[ "${acked:-0}" -ge 500 ] || fail "only '$acked' records acknowledged: $summary"
[ "${aborted:-0}" -ge 10 ] && [ "${committed:-0}" -ge 20 ] || fail "too few transactions to prove anything: $summary"
[ "$rc" = 0 ] || fail "chaos-run exited $rc: $summary"
passed=1
echo "ok"
