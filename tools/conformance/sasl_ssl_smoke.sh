#!/usr/bin/env bash
# Smoke test of run.sh --security sasl_ssl (ctest tools_conformance_sasl_ssl_smoke):
# starts cairnd as run.sh does (SASL_SSL listener, SCRAM-SHA-256 user, test
# CA made at run time), writes the suite's test.conf the same way, and
# checks with kcat reading that file that a record goes in and comes back,
# and that the same file with a wrong password is refused. When the 2.0.2
# suite is already built in tools/conformance/work/, its test 0005 (500
# records produced in order, quick mode) also runs against the broker.
#
# usage: tools/conformance/sasl_ssl_smoke.sh CAIRND
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
. "$here/lib.sh"

cairnd="${1:?usage: sasl_ssl_smoke.sh CAIRND}"
command -v kcat >/dev/null || { echo "kcat is needed" >&2; exit 1; }
work="$(mktemp -d /tmp/cairn-conformance-smoke.XXXXXX)"
cleanup() {
    conformance_stop_target
    rm -rf "$work"
}
trap cleanup EXIT

# shellcheck disable=SC2034 # read by lib.sh
conformance_security=sasl_ssl
bootstrap=""
conformance_start_cairnd "$cairnd" "$work"
conformance_client_conf "$bootstrap" >"$work/test.conf"
grep -q '^security.protocol=SASL_SSL$' "$work/test.conf"

topic="smoke-$$"
echo "over-sasl-ssl" | timeout 60 kcat -F "$work/test.conf" -P -t "$topic"
got="$(timeout 60 kcat -F "$work/test.conf" -C -t "$topic" -o beginning -c 1 -e -q)"
[ "$got" = over-sasl-ssl ] || { echo "read back '$got', expected over-sasl-ssl" >&2; exit 1; }
echo "a record went in and came back over SASL_SSL with test.conf"

sed 's/^sasl.password=.*/sasl.password=wrong/' "$work/test.conf" >"$work/wrong.conf"
if timeout 60 kcat -F "$work/wrong.conf" -L -m 10 >"$work/wrong.out" 2>&1; then
    echo "metadata was served with a wrong password:" >&2
    cat "$work/wrong.out" >&2
    exit 1
fi
grep -qi "authentication" "$work/wrong.out" || { cat "$work/wrong.out" >&2; exit 1; }
echo "a wrong password was refused"

src="$(conformance_src_dir "$here/work" 2>/dev/null || true)"
if [ -n "$src" ] && [ -x "$src/tests/test-runner" ]; then
    python3 "$here/runner.py" --suite "$src/tests" --conf "$work/test.conf" --results "$work/results.txt" \
        --target "cairnd over SASL_SSL (smoke)" --timeout 90 --jobs 1 --tests 0005 --quick
else
    echo "librdkafka's suite is not built in $here/work; its test 0005 was not run"
fi
