#!/usr/bin/env bash
# Leader failover (tools/chaos/chaos-replication --scenarios failover) on 3
# controllers and 3 brokers with broker.session.timeout.ms=9000 (Kafka's)
# and replica.lag.time.max.ms=3000: three times the partition's leader is
# killed -9 while a producer sends one acks=all record at a time, and the
# producer's next acknowledgement must come within the session plus 3.5 s
# (fencing, election, the client's metadata refresh).
# The regression: the active controller forgot every broker's heartbeat
# times whenever its image lagged its log for a moment (each burst of
# metadata writes, such as the ISR shrinks that follow a broker's death,
# 3 s after it here), so the dead leader got a new full session from the
# end of the burst and failovers took 14-16 s instead of 9-10. And each
# restarted broker must rejoin the ISR without help.
. "$(dirname "$0")/../cluster/lib.sh"
: "${CAIRN_CHAOS:?CAIRN_CHAOS must name the cairn-chaos binary}"
. "$(dirname "$0")/ports.sh"
pick_base_port 6

session_ms=9000 bound_ms=12500
rc=0
out="$("$repo/tools/chaos/chaos-replication" --scenarios failover --rounds 3 --session-ms "$session_ms" \
    --base-port "$base_port" --dir "$work/run")" || rc=$?
echo "$out"
[ "$(echo "$out" | grep -c '^round [0-9]* killed [456] failover_ms [0-9]* ')" = 3 ] ||
    fail "not three measured rounds (logs in $work/run)"
echo "$out" | awk -v b="$bound_ms" '$1 == "round" && $6 > b { bad = 1 } END { exit bad }' ||
    fail "a failover took longer than $bound_ms ms with a $session_ms ms session (logs in $work/run)"
# Each fencing came one session after the last heartbeat sent before the kill.
grep -h "sent no heartbeat for" "$work/run"/cluster/node-[123]/cairnd.log ||
    fail "no broker was fenced for its missing heartbeats"
echo "$out" | grep -q "^scenario failover rounds=3 " || fail "no failover summary"
# Every restarted leader rejoined the ISR by itself (a broker once kept
# following at the leader epoch of its start when the image moved on
# while its replica layer subscribed).
echo "$out" | grep -q "^scenario failover .* stuck_restarts=0$" ||
    fail "a restarted broker did not rejoin the ISR: $(echo "$out" | grep '^note: ')"
[ "$rc" = 0 ] || fail "chaos-replication exited $rc"
passed=1
echo "ok"
