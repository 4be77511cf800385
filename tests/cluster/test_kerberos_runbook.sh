#!/usr/bin/env bash
# The Kerberos (GSSAPI) walkthrough of docs/operations.md, run as written:
# every "$ " line between its runbook markers, in order, from the
# repository root, with cairnd on PATH and D set here. Checks in between:
# cairnd answers on its GSSAPI listener before the clients run, the
# consumer reads back what the producer sent, and the broker logged the
# client as User:kafka-client. Skips (77) only without the MIT KDC tools.
. "$(dirname "$0")/lib.sh"

for tool in krb5kdc kdb5_util kadmin.local kinit kcat; do
    command -v "$tool" > /dev/null 2>&1 || PATH="$PATH:/usr/sbin" command -v "$tool" > /dev/null 2>&1 || {
        echo "SKIP: $tool is not installed (apt-get install krb5-kdc krb5-admin-server krb5-user kcat)"
        exit 77
    }
done

mkdir -p "$work/bin"
ln -s "$CAIRND" "$work/bin/cairnd"
export PATH="$work/bin:$PATH:/usr/sbin"
D="$work/k"
doc="$repo/docs/operations.md"

commands="$(awk '/<!-- runbook: kerberos -->/ { on = 1 } /<!-- \/runbook -->/ { on = 0 }
                 on && /^\$ / { sub(/^\$ /, ""); print }' "$doc")"
[ "$(echo "$commands" | wc -l)" -ge 12 ] || fail "the runbook has too few commands: $commands"

# Whatever the runbook started is stopped, also when a step fails.
stop_started() {
    for f in "$D/cairnd.pid" "$D/krb5kdc.pid"; do
        [ -f "$f" ] && kill "$(cat "$f")" 2> /dev/null || true
    done
    cleanup
}
trap stop_started EXIT

cd "$repo"
consumed=""
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
    cairnd*)
        for _ in $(seq 1 300); do
            (exec 3<> /dev/tcp/127.0.0.1/24902) 2> /dev/null && break
            sleep 0.1
        done
        (exec 3<> /dev/tcp/127.0.0.1/24902) 2> /dev/null || fail "cairnd does not listen on 24902: $(tail -20 "$D/cairnd.log")" ;;
    "kcat -C"*)
        consumed="$(echo "$out" | grep -v '^%' || true)" ;;
    kill*)
        # cairnd flushes its partitions as it stops: wait before the dir goes.
        for f in "$D/cairnd.pid" "$D/krb5kdc.pid"; do
            for _ in $(seq 1 200); do
                kill -0 "$(cat "$f")" 2> /dev/null || break
                sleep 0.1
            done
            kill -0 "$(cat "$f")" 2> /dev/null && fail "$f's process did not stop"
            rm -f "$f"
        done ;;
    esac
done <<< "$commands"

[ "$consumed" = "hello-kerberos" ] || fail "the consumer read '$consumed', want hello-kerberos"
grep -q "User:kafka-client authenticated with GSSAPI" "$D/cairnd.log" ||
    fail "the broker did not log User:kafka-client: $(grep sasl "$D/cairnd.log" | tail -5)"
passed=1
