#!/usr/bin/env bash
# cairnd random-uuid and cairnd format (kafka-storage.sh's commands) on real
# processes: a quorum node refuses unformatted storage with one line naming
# the command; format writes meta.properties into every log dir and
# metadata.log.dir, refuses formatted dirs (--ignore-formatted skips those
# of the same cluster, never another's); the formatted node starts and
# leads its quorum. Without voters cairnd still formats on first start.
. "$(dirname "$0")/lib.sh"

id="$("$CAIRND" random-uuid)"
[[ "$id" =~ ^[A-Za-z0-9_-]{22}$ ]] || fail "random-uuid printed '$id'"
[ "$id" != "$("$CAIRND" random-uuid)" ] || fail "random-uuid printed the same id twice"

port=21011
d="$work/node"
mkdir -p "$d"
cat > "$d/server.properties" <<CFG
process.roles=controller
node.id=1
listeners=CONTROLLER://127.0.0.1:$port
controller.listener.names=CONTROLLER
controller.quorum.voters=1@127.0.0.1:$port
log.dirs=$d/a,$d/b
metadata.log.dir=$d/meta
CFG

# Unformatted: refused at once, one line naming the command.
set +e
out="$(timeout 20 "$CAIRND" --config "$d/server.properties" 2>&1)"
rc=$?
set -e
[ "$rc" = 1 ] || fail "cairnd on unformatted dirs exited $rc: $out"
contains "$out" "log directory $d/a is not formatted" "start-up error"
contains "$out" "cairnd format --config <file> --cluster-id <id>" "start-up error"
[ "$(echo "$out" | grep -c 'start-up failed')" = 1 ] || fail "not one start-up line: $out"

out="$("$CAIRND" format --config "$d/server.properties" --cluster-id "$id")"
for sub in a b meta; do
    f="$d/$sub/meta.properties"
    [ -f "$f" ] || fail "no $f"
    grep -qx "version=1" "$f" || fail "$f has no version=1"
    grep -qx "cluster.id=$id" "$f" || fail "$f has no cluster.id=$id"
    grep -qx "node.id=1" "$f" || fail "$f has no node.id=1"
    contains "$out" "Formatted $d/$sub" "format output"
done

expect_refused() { # what needle args...
    local what="$1" needle="$2" rc
    shift 2
    set +e
    out="$("$CAIRND" format "$@" 2>&1)"
    rc=$?
    set -e
    [ "$rc" = 1 ] || fail "$what: format exited $rc: $out"
    contains "$out" "$needle" "$what"
}
expect_refused "again" "log directory $d/a is already formatted; use --ignore-formatted" \
    --config "$d/server.properties" --cluster-id "$id"
other="$("$CAIRND" random-uuid)"
expect_refused "another cluster" "already formatted for cluster.id $id" -c "$d/server.properties" -t "$other"
expect_refused "another cluster, ignoring formatted" "already formatted for cluster.id $id" \
    -c "$d/server.properties" -t "$other" --ignore-formatted
expect_refused "a bad id" "is not 22 base64url characters" -c "$d/server.properties" -t "not-an-id"
# Nothing was written by the refused runs.
grep -qx "cluster.id=$id" "$d/a/meta.properties" || fail "a refused format changed meta.properties"

# A new dir beside formatted ones: -g formats it and skips the rest.
sed -i "s|^log.dirs=.*|log.dirs=$d/a,$d/b,$d/c|" "$d/server.properties"
out="$("$CAIRND" format -c "$d/server.properties" -t "$id" -g)"
contains "$out" "Formatted $d/c" "format -g"
contains "$out" "Already formatted: $d/a" "format -g"
before="$(cat "$d/a/meta.properties")"

"$CAIRND" --config "$d/server.properties" >> "$work/node.log" 2>&1 &
pid=$!
leader=""
for _ in $(seq 1 100); do
    leader="$("$CAIRN" quorum status --bootstrap-controller "127.0.0.1:$port" 2>/dev/null | awk '$1 == "LEADER" { print $2 }')" || true
    [ "$leader" = 1 ] && break
    sleep 0.1
done
[ "$leader" = 1 ] || fail "the formatted controller does not lead its quorum: $(tail -n 5 "$work/node.log")"
kill -TERM "$pid"
wait "$pid" || fail "cairnd did not stop cleanly"
[ "$before" = "$(cat "$d/a/meta.properties")" ] || fail "start-up rewrote a formatted meta.properties"
grep -q "cluster $id" "$work/node.log" || fail "the node does not run with cluster.id $id"

# Without voters nothing changes: the first start formats, later ones load.
single="$work/single"
bport=21012
for start in 1 2; do
    "$CAIRND" --override "listeners=PLAINTEXT://127.0.0.1:$bport" --override "log.dirs=$single" \
        --override node.id=1 >> "$work/single.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$bport") 2>/dev/null && break
        sleep 0.1
    done
    kill -0 "$pid" || fail "single node start $start failed: $(tail -n 5 "$work/single.log")"
    kill -TERM "$pid"
    wait "$pid" || fail "single node start $start did not stop cleanly"
    [ "$start" = 1 ] && first="$(cat "$single/meta.properties")"
done
[ "$first" = "$(cat "$single/meta.properties")" ] || fail "the single node's meta.properties changed on restart"
passed=1
echo "ok"
