#!/usr/bin/env bash
# The controllers-and-brokers runbook of docs/operations.md, run as
# written: every "$ " line of its code blocks between the runbook markers,
# in order, from the repository root, with cairnd and cairn on PATH and D
# set here. Checks in between: every broker lists the three brokers (and
# no controller), the leader's DescribeQuorum lists the brokers as
# observers, topics created through brokers (also after the leader's
# kill -9) have their leaders spread over the brokers, a stopped
# broker leaves Metadata and comes back, and a broker added with
# controller.quorum.bootstrap.servers only registers and creates a topic.
. "$(dirname "$0")/lib.sh"

mkdir -p "$work/bin"
ln -s "$CAIRND" "$work/bin/cairnd"
ln -s "$CAIRN" "$work/bin/cairn"
export PATH="$work/bin:$PATH"
D="$work/c"
doc="$repo/docs/operations.md"

commands="$(awk '/<!-- runbook: controllers-brokers -->/ { on = 1 } /<!-- \/runbook -->/ { on = 0 }
                 on && /^\$ / { sub(/^\$ /, ""); print }' "$doc")"
[ "$(echo "$commands" | wc -l)" -ge 12 ] || fail "the runbook has too few commands: $commands"

# Broker ids in `cairn cluster info` output, sorted, one line.
broker_ids() { awk '/^BROKERS/ { on = 1; next } on && $1 ~ /^[0-9]/ { sub(/\*$/, "", $1); print $1 }' | sort | tr '\n' ' '; }

cd "$repo"
ran=0 infos=0
while IFS= read -r line; do
    case "$line" in D=*) continue ;; esac
    echo "\$ $line"
    set +e
    eval "$line" > "$work/out" 2>&1 < /dev/null
    rc=$?
    set -e
    out="$(cat "$work/out")"
    echo "$out"
    [ "$rc" = 0 ] || fail "'$line' exited $rc: $out"
    case "$line" in
    "cairn cluster info"*)
        infos=$((infos + 1))
        ids="$(echo "$out" | broker_ids)"
        if [ "$infos" = 1 ]; then
            [ "$ids" = "4 5 6 " ] || fail "brokers listed: '$ids', want 4 5 6"
            echo "$out" | grep -Eq '^CONTROLLER +[456]$' || fail "the controller named is no broker: $out"
        elif [ "$infos" = 3 ]; then
            # Broker 7, added with bootstrap servers only, registered and
            # serves Metadata (broker 6 is back too).
            [ "$ids" = "4 5 6 7 " ] || fail "after adding broker 7 the brokers listed are '$ids', want 4 5 6 7"
        else
            # Broker 4 hears of the fence at its next fetch from the leader.
            for _ in $(seq 1 100); do
                [ "$ids" = "4 5 " ] && break
                sleep 0.1
                ids="$(eval "$line" 2>&1 < /dev/null | broker_ids)"
            done
            [ "$ids" = "4 5 " ] || fail "after stopping broker 6 the brokers listed are '$ids', want 4 5"
        fi ;;
    "cairn topic describe orders"*)
        leaders="$(echo "$out" | awk '/^PARTITION +LEADER/ { on = 1; next } on && NF >= 2 { print $2 }' | sort -u | tr '\n' ' ')"
        [ "$leaders" = "4 5 6 " ] || fail "the leaders of orders are on '$leaders', want 4 5 6: $out" ;;
    "grep -E 'controller.quorum."*)
        [ "$out" = "controller.quorum.bootstrap.servers=127.0.0.1:24601,127.0.0.1:24602,127.0.0.1:24603" ] ||
            fail "broker 7 is not configured with the controllers as bootstrap servers only: $out" ;;
    "cairn topic describe audit"*)
        [ "$(echo "$out" | awk '/^PARTITION +LEADER/ { on = 1; next } on && NF >= 2 { n++ } END { print n + 0 }')" = 4 ] ||
            fail "audit, created through broker 7, does not list 4 partitions with leaders: $out" ;;
    "cairn quorum status"*)
        [ "$(echo "$out" | grep -Ec '^[456] +observer')" = 3 ] || fail "the leader does not list 3 observers: $out"
        [ "$(echo "$out" | grep -Ec '^[123] +voter')" = 3 ] || fail "the leader does not list 3 voters: $out" ;;
    esac
    ran=$((ran + 1))
done <<< "$commands"
[ ! -e "$D" ] || fail "the runbook's last command did not remove $D"
echo "ran $ran runbook commands"
passed=1
