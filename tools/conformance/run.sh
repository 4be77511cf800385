#!/usr/bin/env bash
# Runs librdkafka's own test suite (the numbered tests that need a real
# broker) against cairnd, or against librdkafka's mock cluster to check the
# runner itself. Results go to tools/conformance/work/results.txt, or with
# --suite npm (librdkafka 2.12.0 from node-rdkafka's npm package) to
# tools/conformance/work-2.12/results.txt.
#
# usage: tools/conformance/run.sh [--suite debian|npm] [--quick] [--target cairnd|cluster|mock]
#            [--nodes N] [--cairnd PATH] [--bootstrap H:P] [--tests 0001,0002,...]
#            [--timeout SECONDS] [--jobs N] [--kafka-version V] [--prepare-only]
#            [--security plaintext|sasl_ssl]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=lib.sh
. "$here/lib.sh"

quick=0
target=cairnd
cairnd=""
bootstrap=""
tests_filter=""
per_test_timeout=""
jobs=2
kafka_version=3.9.0
mock_brokers=1
cluster_nodes=3
prepare_only=0
suite=debian

usage() {
    sed -n '8,11p' "$0" | sed 's/^# \{0,1\}//'
    exit "${1:-0}"
}

while [ $# -gt 0 ]; do
    case "$1" in
        --suite) suite="$2"; shift ;;
        --quick) quick=1 ;;
        --target) target="$2"; shift ;;
        --cairnd) cairnd="$2"; shift ;;
        --bootstrap) bootstrap="$2"; target=external; shift ;;
        --tests) tests_filter="$2"; shift ;;
        --timeout) per_test_timeout="$2"; shift ;;
        --jobs) jobs="$2"; shift ;;
        --kafka-version) kafka_version="$2"; shift ;;
        --mock-brokers) mock_brokers="$2"; shift ;;
        --nodes) cluster_nodes="$2"; shift ;;
        --prepare-only) prepare_only=1 ;;
        --security) conformance_security="$2"; shift ;;
        -h|--help) usage 0 ;;
        *) echo "unknown argument: $1" >&2; usage 2 ;;
    esac
    shift
done

case "$target" in
    cairnd|mock|cluster|external) ;;
    *) echo "--target must be cairnd, cluster or mock" >&2; exit 2 ;;
esac

case "$conformance_security" in
    plaintext) ;;
    sasl_ssl)
        [ "$target" = cairnd ] || { echo "--security sasl_ssl needs --target cairnd" >&2; exit 2; } ;;
    *) echo "--security must be plaintext or sasl_ssl" >&2; exit 2 ;;
esac

case "$suite" in
    debian)
        work="$here/work"
        mkdir -p "$work"
        conformance_prepare_source "$work"
        conformance_build_suite "$work"
        ;;
    npm)
        work="$here/work-2.12"
        mkdir -p "$work"
        conformance_prepare_npm_source "$work"
        conformance_build_npm_suite "$work"
        conformance_initial_rebalance_delay_ms=3000
        ;;
    *) echo "--suite must be debian or npm" >&2; exit 2 ;;
esac
[ "$prepare_only" = 1 ] && { echo "suite ready in $(conformance_src_dir "$work")/tests"; exit 0; }

src="$(conformance_src_dir "$work")"
trap conformance_stop_target EXIT
trap 'exit 130' INT TERM
case "$target" in
    mock)
        bench="$(conformance_find_bench "$repo" "$work")"
        conformance_start_mock "$bench" "$work" "$mock_brokers"
        label="librdkafka mock cluster ($mock_brokers broker(s)) at $bootstrap"
        ;;
    cairnd)
        [ -n "$cairnd" ] || cairnd="$repo/build/core/server/cairnd"
        [ -x "$cairnd" ] || { echo "cairnd not found at $cairnd (use --cairnd PATH)" >&2; exit 1; }
        conformance_start_cairnd "$cairnd" "$work"
        label="cairnd ($cairnd) at $bootstrap"
        if [ "$conformance_security" = sasl_ssl ]; then
            label="$label over SASL_SSL (SCRAM-SHA-256)"
        fi
        ;;
    cluster)
        [ -n "$cairnd" ] || cairnd="$repo/build/core/server/cairnd"
        [ -x "$cairnd" ] || { echo "cairnd not found at $cairnd (use --cairnd PATH)" >&2; exit 1; }
        conformance_repo="$repo"
        conformance_start_cluster "$cairnd" "$work" "$cluster_nodes"
        label="$cluster_nodes cairnd nodes ($cairnd) at $bootstrap"
        ;;
    external)
        label="broker at $bootstrap"
        ;;
esac

conformance_client_conf "$bootstrap" >"$work/test.conf"
if [ -z "$per_test_timeout" ]; then
    # 2.12's 0113 (cooperative rebalancing, 40 subtests) alone runs ~10 min.
    if [ "$quick" = 1 ]; then per_test_timeout=60
    elif [ "$suite" = npm ]; then per_test_timeout=900
    else per_test_timeout=150; fi
fi
runner_args=(--suite "$src/tests" --conf "$work/test.conf" --results "$work/results.txt"
    --target "$label" --kafka-version "$kafka_version" --timeout "$per_test_timeout"
    --jobs "$jobs" --tests "$tests_filter")
[ "$quick" = 1 ] && runner_args+=(--quick)
echo "running librdkafka's broker tests against $label"
status=0
python3 "$here/runner.py" "${runner_args[@]}" || status=$?
if [ -n "$conformance_target_pid" ] && ! kill -0 "$conformance_target_pid" 2>/dev/null; then
    echo "note: the broker exited during the run; see $work/target.log" | tee -a "$work/results.txt"
fi
exit "$status"
