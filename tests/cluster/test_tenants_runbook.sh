#!/usr/bin/env bash
# The shared-cluster runbook of docs/operations.md, run as written: every
# "$ " line between its runbook markers, in order, from the repository
# root, with cairnd and cairn on PATH and D set here. Checks in between:
# the node restarted with the tenant plugins, the tenant's three prefixed
# ACLs and two quotas are listed, and none is left after its removal.
. "$(dirname "$0")/lib.sh"

mkdir -p "$work/bin"
ln -s "$CAIRND" "$work/bin/cairnd"
ln -s "$CAIRN" "$work/bin/cairn"
export PATH="$work/bin:$PATH"
D="$work/c"
doc="$repo/docs/operations.md"

commands="$(awk '/<!-- runbook: shared-cluster -->/ { on = 1 } /<!-- \/runbook -->/ { on = 0 }
                 on && /^\$ / { sub(/^\$ /, ""); print }' "$doc")"
[ "$(echo "$commands" | wc -l)" -ge 14 ] || fail "the runbook has too few commands: $commands"

cd "$repo"
ran=0 acl_lists=0
while IFS= read -r line; do
    case "$line" in D=*) continue ;; esac
    echo "\$ $line"
    # In this shell, so the runbook's variables (CAIRN_BROKERS) carry over.
    set +e
    eval "$line" > "$work/out" 2>&1 < /dev/null
    rc=$?
    set -e
    out="$(cat "$work/out")"
    echo "$out"
    [ "$rc" = 0 ] || fail "'$line' exited $rc: $out"
    case "$line" in
    "tools/cairn-cluster start 1"*)
        grep -q "tenant-limits" "$D/node-1/cairnd.log" || fail "the node did not load tenant-limits: $(tail -20 "$D/node-1/cairnd.log")" ;;
    "cairn acl list"*)
        acl_lists=$((acl_lists + 1))
        n="$(echo "$out" | grep -c 'PREFIXED  User:team-a-app' || true)"
        if [ "$acl_lists" = 1 ]; then
            [ "$n" = 3 ] || fail "the tenant has $n prefixed ACLs listed, want 3: $out"
        else
            [ "$n" = 0 ] || fail "ACLs of the removed tenant are still listed: $out"
        fi ;;
    "cairn quota describe"*)
        contains "$out" "producer_byte_rate  1048576" "the tenant's produce quota"
        contains "$out" "consumer_byte_rate  2097152" "the tenant's consume quota" ;;
    esac
    ran=$((ran + 1))
done <<< "$commands"
[ "$acl_lists" = 2 ] || fail "the runbook listed ACLs $acl_lists times, want 2"
[ ! -e "$D" ] || fail "the runbook's last command did not remove $D"
echo "ran $ran runbook commands"
passed=1
