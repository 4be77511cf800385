#!/usr/bin/env bash
# tools/failover-bench, short: 3 kill -9 of the quorum leader, each
# followed by a new leader at a higher epoch within 10 s (election timeout
# 500 ms), and the summary line. With --create-topics a broker forwards a
# CreateTopics sent at each kill: every one must succeed without the client
# having to retry it.
. "$(dirname "$0")/lib.sh"

out="$("$repo/tools/failover-bench" --kills 3 --dir "$work/c" --base-port 23000 --election-timeout-ms 500 \
    --fetch-timeout-ms 1000 --max-ms 10000 --create-topics)" || fail "failover-bench failed: $out"
echo "$out"
[ "$(echo "$out" | grep -c '^round [0-9]*: killed leader')" = 3 ] || fail "not 3 rounds"
contains "$out" "failover ms, named by DescribeQuorum, over 3 kills: min " "summary"
contains "$out" "failover ms, elected (leader's log), over 3 kills: min " "summary"
[ "$(echo "$out" | grep -c '^round [0-9]*: CreateTopics sent at the kill succeeded after ')" = 3 ] ||
    fail "not 3 CreateTopics that succeeded"
contains "$out" "CreateTopics sent at the kill that failed: 0 of 3" "summary"
passed=1
