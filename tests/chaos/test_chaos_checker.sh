#!/usr/bin/env bash
# The chaos checker sees what it is there to see. First on crafted logs: a
# clean history passes; a lost acknowledged record, a duplicate, a phantom
# and a reordering each fail it and are named, as does a read record of an
# aborted transaction. Then on a real broker: a
# one-node cluster takes a short workload and the full read checks clean;
# the node is killed, one partition's segment is cut to nothing, the node
# starts again, and the same check must report the loss and exit 1.
. "$(dirname "$0")/../cluster/lib.sh"
. "$(dirname "$0")/ports.sh"
: "${CAIRN_CHAOS:?CAIRN_CHAOS must name the cairn-chaos binary}"

check() { # acked read -> prints the report, sets rc
    rc=0
    report="$("$CAIRN_CHAOS" check --acked "$1" --read "$2")" || rc=$?
}
field() { echo "$report" | awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }'; }

# --- crafted logs: producer 0.0 sent seqs 0..3, all acknowledged
cat > "$work/acked.log" <<'LOG'
A 0.0 0 0 0
A 0.0 1 1 0
A 0.0 2 0 1
A 0.0 3 1 1
S 0.0 4
LOG
printf 'R 0 0 0.0-0 ok\nR 1 0 0.0-1 ok\nR 0 0 0.0-0 ok\nR 0 1 0.0-2 ok\nR 1 1 0.0-3 ok\n' > "$work/clean.log"
check "$work/acked.log" "$work/clean.log"
[ "$rc" = 0 ] || fail "a clean history fails the check: $report"
[ "$(field redelivered)" = 1 ] || fail "a position read twice is a redelivery: $report"

printf 'R 0 0 0.0-0 ok\nR 1 0 0.0-1 ok\nR 0 1 0.0-2 ok\n' > "$work/lost.log"
check "$work/acked.log" "$work/lost.log"
[ "$rc" = 1 ] || fail "a lost record exits $rc, not 1"
[ "$(field lost)" = 1 ] || fail "lost is not 1: $report"
contains "$report" "lost: 0.0-3 acknowledged at partition 1 offset 1, never read" "lost example"

printf 'R 0 0 0.0-0 ok\nR 1 0 0.0-1 ok\nR 0 1 0.0-2 ok\nR 1 1 0.0-3 ok\nR 1 2 0.0-3 ok\n' > "$work/dup.log"
check "$work/acked.log" "$work/dup.log"
[ "$rc" = 1 ] && [ "$(field duplicates)" = 1 ] && [ "$(field lost)" = 0 ] || fail "duplicate not seen: $report"

printf 'R 0 0 0.0-0 ok\nR 1 0 0.0-1 ok\nR 0 1 0.0-2 ok\nR 1 1 0.0-3 ok\nR 1 2 0.0-4 ok\nR 1 3 7.0-0 ok\nR 1 4 0.0-2 bad\n' > "$work/phantom.log"
check "$work/acked.log" "$work/phantom.log"
[ "$rc" = 1 ] && [ "$(field phantoms)" = 2 ] || fail "phantoms (seq past the count sent, unknown producer) not seen: $report"
[ "$(field bad_values)" = 1 ] || fail "a value not matching its key not seen: $report"

printf 'R 0 0 0.0-2 ok\nR 0 1 0.0-0 ok\nR 1 0 0.0-1 ok\nR 1 1 0.0-3 ok\n' > "$work/order.log"
check "$work/acked.log" "$work/order.log"
[ "$rc" = 1 ] && [ "$(field out_of_order)" = 1 ] || fail "reordering not seen: $report"

# A transactional producer t0.0: seqs 0-1 committed, 2-3 aborted. Reading
# the committed ones passes; reading an aborted one fails as aborted_read;
# missing a committed one is a loss.
printf 'A t0.0 0 0 0\nA t0.0 1 0 1\nX t0.0 2\nX t0.0 3\nS t0.0 4\n' > "$work/txn.log"
printf 'R 0 0 t0.0-0 ok\nR 0 1 t0.0-1 ok\n' > "$work/txn-ok.log"
check "$work/txn.log" "$work/txn-ok.log"
[ "$rc" = 0 ] && [ "$(field aborted)" = 2 ] && [ "$(field aborted_read)" = 0 ] || fail "committed-only read: $report"
printf 'R 0 0 t0.0-0 ok\nR 0 1 t0.0-1 ok\nR 0 3 t0.0-3 ok\n' > "$work/txn-bad.log"
check "$work/txn.log" "$work/txn-bad.log"
[ "$rc" = 1 ] && [ "$(field aborted_read)" = 1 ] || fail "an aborted record read is not seen: $report"
contains "$report" "aborted read: t0.0-3 at partition 0 offset 3" "aborted read example"
printf 'R 0 0 t0.0-0 ok\n' > "$work/txn-lost.log"
check "$work/txn.log" "$work/txn-lost.log"
[ "$rc" = 1 ] && [ "$(field lost)" = 1 ] || fail "a committed record missing is not a loss: $report"

# --- a real broker whose segment loses its records
c="$work/c"
pick_base_port 1
"$cluster" up --combined 1 --dir "$c" --base-port "$base_port" > "$work/up.log"
"$cluster" wait-leader --dir "$c" > /dev/null
bootstrap="127.0.0.1:$((base_port + 1))"
for _ in $(seq 1 60); do
    "$CAIRN" topic create chaos -p 2 -r 1 -b "$bootstrap" > /dev/null 2>&1 && break
    sleep 0.5
done
"$CAIRN_CHAOS" work --bootstrap "$bootstrap" --topic chaos --out "$work" --seconds 4 --producers 2 --rate 50 \
    --drain-seconds 3 --max-drain-seconds 60 2> "$work/work.log" || fail "workload failed: $(tail -5 "$work/work.log")"
"$CAIRN_CHAOS" read --bootstrap "$bootstrap" --topic chaos --out "$work/final.log" --timeout-seconds 60 \
    2>> "$work/work.log" || fail "full read failed: $(tail -5 "$work/work.log")"
check "$work/acked.log" "$work/final.log"
[ "$rc" = 0 ] || fail "the undisturbed run fails the check: $report"
acked="$(field acked)"
[ "$acked" -ge 100 ] || fail "only $acked records acknowledged: $report"
in_p0="$(awk '$1 == "A" && $4 == 0' "$work/acked.log" | wc -l)"
[ "$in_p0" -ge 1 ] || fail "no record acknowledged on partition 0"

"$cluster" kill 1 --dir "$c" > /dev/null
segment="$(ls "$c"/node-1/data/chaos-0/*.log | head -n 1)"
[ -s "$segment" ] || fail "no segment with data in $c/node-1/data/chaos-0"
: > "$segment"
"$cluster" start 1 --dir "$c" > /dev/null
"$CAIRN_CHAOS" read --bootstrap "$bootstrap" --topic chaos --out "$work/final-cut.log" --timeout-seconds 30 \
    2>> "$work/work.log" || true
check "$work/acked.log" "$work/final-cut.log"
[ "$rc" = 1 ] || fail "the cut segment is not reported (exit $rc): $report"
[ "$(field lost)" = "$in_p0" ] || fail "lost is not the $in_p0 records of partition 0: $report"
"$cluster" down --dir "$c" --wipe > /dev/null
passed=1
echo "ok: the checker reports $in_p0 of $acked acknowledged records lost from the cut segment"
