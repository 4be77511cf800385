#!/usr/bin/env bash
# The CI skip check on hand-made ctest reports: an honest run passes; a
# cmocka skip, an exit-77 skip, a test not run, or too few tests fail it;
# an allowed skip does not.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
check="$here/check_test_run.py"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT

cat > "$dir/allowed.txt" <<'LIST'
# minimum-tests: 2
unit_may_skip   needs a CPU feature
LIST

report() { # name status output [skipped-element]
    printf '<testcase name="%s" classname="%s" time="1" status="%s">%s<system-out>%s</system-out></testcase>\n' \
        "$1" "$1" "$2" "${4:-}" "$3"
}
suite() {
    { echo '<?xml version="1.0" encoding="UTF-8"?><testsuite name="t" tests="3">'; cat; echo '</testsuite>'; } > "$dir/$1"
}

expect() { # want-exit file
    set +e
    "$check" "$dir/$2" "$dir/allowed.txt" > "$dir/out" 2>&1
    got=$?
    set -e
    if [ "$got" != "$1" ]; then
        echo "FAIL: $2 exited $got, expected $1:"; cat "$dir/out"; exit 1
    fi
}

{ report unit_a run "[  PASSED  ] 3 test(s)."; report unit_b run ok; } | suite honest.xml
expect 0 honest.xml
{ report unit_a run "[  SKIPPED ] test_x"; report unit_b run ok; } | suite cmocka.xml
expect 1 cmocka.xml
grep -q 'unit_a: a cmocka test called skip()' "$dir/out"
{ report unit_a notrun "" '<skipped message="Skipped"/>'; report unit_b run ok; } | suite exit77.xml
expect 1 exit77.xml
{ report unit_a run ok; report unit_may_skip run "[  SKIPPED ] test_hw"; } | suite allowed.xml
expect 0 allowed.xml
report unit_a run ok | suite short.xml
expect 1 short.xml
grep -q 'fewer than the 2 expected' "$dir/out"
echo "check_test_run: all cases behave"
