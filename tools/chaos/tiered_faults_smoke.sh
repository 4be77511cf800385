#!/usr/bin/env bash
# Smoke run of tools/chaos/tiered-faults (ctest tools_tiered_faults_smoke):
# 16 MB, a 5 s outage, a 5 s baseline. The run itself fails on any lost,
# duplicated or changed record and on every broken check; here its summary
# is checked for form (every line there, every figure a number), never for
# timing, which a loaded machine cannot promise. Then every tiered-faults
# command line in docs/benchmarks.md and README.md is parsed by the script
# itself (against a build directory that does not exist, so it stops right
# after its option parsing): a flag the docs show and the script no longer
# takes fails here.
#
# usage: tools/chaos/tiered_faults_smoke.sh BUILD_DIR
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="${1:?usage: tiered_faults_smoke.sh BUILD_DIR}"
out="$(mktemp -d "${TMPDIR:-/tmp}/cairn-tiered-faults-smoke.XXXXXX")"
trap 'rm -rf "$out"' EXIT

"$here/tiered-faults" --build "$build" --mb 16 --outage-s 5 --baseline-s 5 --kill-mb 8 | tee "$out/run.txt"

python3 - "$out/run.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
num = r"-?[0-9]+(?:\.[0-9]+)?"
lines = [
    r"^== tiered-faults: backend=storage-local mb=16 segment_mb=1 kill_mb=8 rate=200/s outage_s=5$",
    rf"^  records checked byte for byte from offset 0: 24576, 4 full reads",
    rf"^  local tail after copy: {num} segments, {num} bytes on disk; remote segments: {num}$",
    rf"^  kill -9 mid-copy: mid_copy=yes object=\S+; copies counted after restart: {num}, new remote segments: {num}; objects of unfinished copies left: 0$",
    rf"^  outage: copy errors {num}, remote read errors {num}, steady local segments {num} -> {num}$",
    rf"^  read from 0 started in the outage: done {num} s after the store came back$",
    rf"^  watcher: checked {num} bad 0 ",
] + [
    rf"^  {kind:<7} latency ms: before p50 {num} p99 {num} \(n={num}\) \| outage p50 {num} p99 {num} max {num} \(n={num}\) \| after p99 {num} \| p99 ratio {num}$"
    for kind in ("produce", "e2e")
] + [r"^tiered-faults: PASS$"]
for p in lines:
    if not re.search(p, text, re.M):
        sys.exit(f"no line matching {p!r} in:\n{text}")
print("tiered-faults smoke: well-formed")
PY

# The documented command lines: each backquoted span naming tiered-faults,
# its placeholders (<...>) filled and its optional parts ([...]) taken.
python3 - "$repo/docs/benchmarks.md" "$repo/README.md" >"$out/documented.txt" <<'PY'
import re, shlex, sys
for path in sys.argv[1:]:
    for span in re.findall(r"`([^`]*tools/chaos/tiered-faults[^`]*)`", open(path).read()):
        words = shlex.split(re.sub(r"<[^>]*>", "/placeholder", span).replace("[", " ").replace("]", " "))
        words = words[[i for i, w in enumerate(words) if w.endswith("tools/chaos/tiered-faults")][0] + 1:]
        print("\t".join(w for w in words if w != "..."))
PY
documented=$(wc -l <"$out/documented.txt")
[ "$documented" -ge 2 ] || { echo "only $documented tiered-faults commands found in docs/benchmarks.md and README.md" >&2; exit 1; }
help_text="$("$here/tiered-faults" --help)"
while IFS=$'\t' read -r -a args; do
    for a in ${args[@]+"${args[@]}"}; do
        case "$a" in
            --*) grep -qF -- "$a" <<<"$help_text" || { echo "tiered-faults --help does not name $a" >&2; exit 1; } ;;
        esac
    done
    rc=0
    "$here/tiered-faults" ${args[@]+"${args[@]}"} --build "$out/no-such-build" 2>"$out/err.txt" || rc=$?
    if [ "$rc" != 1 ] || ! grep -q "build cairnd, cairn, cairn-tiered-faults" "$out/err.txt"; then
        echo "documented: tiered-faults ${args[*]-} was not taken (exit $rc): $(cat "$out/err.txt")" >&2
        exit 1
    fi
done <"$out/documented.txt"
echo "tiered-faults smoke: $documented documented command lines parsed"
