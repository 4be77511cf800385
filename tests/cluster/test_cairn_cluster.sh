#!/usr/bin/env bash
# tools/cairn-cluster on real processes: up 3 controllers, status names a
# leader, kill -9 of the leader, status names another one at a higher
# epoch, the killed node starts again and follows, down stops all and keeps
# the data; a combined broker,controller cluster serves clients.
. "$(dirname "$0")/lib.sh"

c="$work/c"
leader_of() { "$cluster" status --dir "$c" | awk '$1 == "quorum" && $2 == "leader" && $3 != "unknown" { print $3, $5 }'; }
wait_leader() { # not-this-node
    local view
    for _ in $(seq 1 150); do
        view="$(leader_of)"
        if [ -n "$view" ] && [ "${view% *}" -ge 1 ] && [ "${view% *}" != "${1:-}" ]; then echo "$view"; return 0; fi
        sleep 0.1
    done
    "$cluster" status --dir "$c" >&2 || true
    fail "no leader (other than '${1:-}') within 15 s"
}

out="$("$cluster" up --controllers 3 --dir "$c" --base-port 22000 --election-timeout-ms 500 --fetch-timeout-ms 1000)"
contains "$out" "controllers: 1@127.0.0.1:22101,2@127.0.0.1:22102,3@127.0.0.1:22103" "up"
for i in 1 2 3; do
    grep -qx "process.roles=controller" "$c/node-$i/server.properties" || fail "node $i is no controller"
    grep -q "^cluster.id=" "$c/node-$i/data/meta.properties" || fail "node $i is not formatted"
done
read -r leader epoch <<< "$(wait_leader)"
status="$("$cluster" status --dir "$c")"
[ "$(echo "$status" | grep -c 'up (pid')" = 3 ] || fail "not 3 nodes up: $status"

"$cluster" kill "$leader" --dir "$c" > /dev/null
status="$("$cluster" status --dir "$c")"
echo "$status" | grep -Eq "^node $leader +controller +down$" || fail "node $leader not down after the kill: $status"
read -r next next_epoch <<< "$(wait_leader "$leader")"
[ "$next_epoch" -gt "$epoch" ] || fail "new leader $next at epoch $next_epoch, not above $epoch"
[ "$("$cluster" leader --dir "$c")" = "$next" ] || fail "leader disagrees with status"

"$cluster" start "$leader" --dir "$c" > /dev/null
for _ in $(seq 1 100); do
    view="$("$cluster" view "$leader" --dir "$c" 2>/dev/null)" || true
    [ "$view" = "$next $next_epoch" ] && break
    sleep 0.1
done
[ "$view" = "$next $next_epoch" ] || fail "restarted node $leader sees '$view', not '$next $next_epoch'"

pids="$(cat "$c"/node-*/pid)"
out="$("$cluster" down --dir "$c")"
contains "$out" "data kept in $c" "down"
for i in 1 2 3; do
    [ -f "$c/node-$i/data/__cluster_metadata-0/quorum-state" ] || fail "node $i lost its quorum-state"
done
for p in $pids; do
    ! kill -0 "$p" 2>/dev/null || [ "$(awk '{ print $3 }' "/proc/$p/stat" 2>/dev/null)" = Z ] ||
        fail "pid $p still runs after down"
done
out="$("$cluster" down --dir "$c" --wipe)"
[ ! -e "$c" ] || fail "down --wipe left $c"

# Combined nodes: clients on the PLAINTEXT ports.
out="$("$cluster" up --combined 3 --dir "$c" --base-port 22200 --election-timeout-ms 500 --fetch-timeout-ms 1000)"
contains "$out" "bootstrap servers: 127.0.0.1:22201,127.0.0.1:22202,127.0.0.1:22203" "up --combined"
wait_leader > /dev/null
"$CAIRN" topic create cluster-test --partitions 1 -b 127.0.0.1:22202 > /dev/null || fail "no topic created on a combined node"
"$cluster" down --dir "$c" --wipe > /dev/null
passed=1
echo "ok"
