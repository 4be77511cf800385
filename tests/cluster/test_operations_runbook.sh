#!/usr/bin/env bash
# The controller quorum runbook of docs/operations.md, run as written: every
# "$ " line of its code blocks between the runbook markers, in order, from
# the repository root, with cairnd and cairn on PATH and D set here. A line
# marked "# exits 1" must fail with that status; every other must succeed.
# Checks in between: the replaced node comes back formatted with the
# cluster's id and catches up (LAG 0 at the leader).
. "$(dirname "$0")/lib.sh"

mkdir -p "$work/bin"
ln -s "$CAIRND" "$work/bin/cairnd"
ln -s "$CAIRN" "$work/bin/cairn"
export PATH="$work/bin:$PATH"
D="$work/c"
doc="$repo/docs/operations.md"

commands="$(awk '/<!-- runbook: controller-quorum -->/ { on = 1 } /<!-- \/runbook -->/ { on = 0 }
                 on && /^\$ / { sub(/^\$ /, ""); print }' "$doc")"
[ "$(echo "$commands" | wc -l)" -ge 15 ] || fail "the runbook has too few commands: $commands"

cd "$repo"
ran=0
while IFS= read -r line; do
    case "$line" in D=*) continue ;; esac
    want=0
    case "$line" in *"# exits 1"*) want=1 ;; esac
    echo "\$ $line"
    # In this shell, so the runbook's variables carry over to later lines.
    set +e
    eval "$line" > "$work/out" 2>&1 < /dev/null
    rc=$?
    set -e
    out="$(cat "$work/out")"
    echo "$out"
    [ "$rc" = "$want" ] || fail "'$line' exited $rc, the runbook says $want: $out"
    case "$line" in
    "cairnd --config"*) contains "$out" "is not formatted" "start on the empty disk" ;;
    "cairnd format"*) grep -qx "cluster.id=$CLUSTER_ID" "$D/node-2/data/meta.properties" ||
        fail "node 2 was not formatted with $CLUSTER_ID" ;;
    "tools/cairn-cluster start 2"*)
        # The replacement catches up: LAG 0 for node 2 at the leader.
        lag=""
        for _ in $(seq 1 100); do
            leader="$(tools/cairn-cluster leader --dir "$D" 2>/dev/null)" || leader=""
            if [ -n "$leader" ]; then
                lag="$(cairn quorum status --bootstrap-controller "127.0.0.1:$((24100 + leader))" 2>/dev/null |
                    awk '$1 == "2" && $2 == "voter" { print $4 }')" || true
                [ "$lag" = 0 ] && break
            fi
            sleep 0.1
        done
        [ "$lag" = 0 ] || fail "the replaced node 2 did not catch up (lag '$lag')" ;;
    esac
    ran=$((ran + 1))
done <<< "$commands"
[ ! -e "$D" ] || fail "the runbook's last command did not remove $D"
echo "ran $ran runbook commands"
passed=1
