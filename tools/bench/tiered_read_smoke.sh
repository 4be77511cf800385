#!/usr/bin/env bash
# Smoke run of tiered_read.sh (ctest tools_tiered_read_smoke), storage-local
# only: 8 MB a topic in 1 MiB segments, one round, once in full and once
# --produce-only --settle. The output is checked for form (every result line there,
# every figure a number), never for timing, which a loaded machine cannot
# promise; the cold read must have fetched segments from the remote store.
# Then every tiered_read.sh command line in docs/benchmarks.md is parsed by
# the script itself (against a build directory that does not exist, so it
# stops right after its option parsing): a flag the docs show and the
# script no longer takes fails here. Last, cairn-segment-copy-cost in small.
#
# usage: tools/bench/tiered_read_smoke.sh BUILD_DIR
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="${1:?usage: tiered_read_smoke.sh BUILD_DIR}"
out="$(mktemp -d "${TMPDIR:-/tmp}/cairn-tiered-smoke.XXXXXX")"
trap 'rm -rf "$out"' EXIT

"$here/tiered_read.sh" --build "$build" --no-s3 --mb 8 --segment-mb 1 --rounds 1 --out "$out/full" |
    tee "$out/full.txt"
"$here/tiered_read.sh" --build "$build" --no-s3 --mb 8 --segment-mb 1 --rounds 1 --produce-only --settle --out "$out/produce" |
    tee "$out/produce.txt"

python3 - "$out" <<'PY'
import re, sys
out = sys.argv[1]
num = r"([0-9]+(?:\.[0-9]+)?)"
runs = rf"{num}(?:, {num})*"  # per-run values, in order
produce_lines = [
    rf"^== storage-local: 1 round\(s\)",
    rf"^  produce, tiering off  MB/s {runs} \[{num}\]   p99 ms {runs} \[{num}\]$",
    rf"^  produce, tiering on   MB/s {runs} \[{num}\]   p99 ms {runs} \[{num}\]$",
    rf"^  produce on/off \(medians\): {num}$",
    rf"^storage-local copied_s_after_last_produce {num}$",
    rf"^storage-local copy_throttle_ms {num}$",
    rf"^  produce on/off per round: {runs} \[{num}\]$",
    rf"^storage-local copier_cpu_s {num}$",
    rf"^storage-local broker_cpu_s {num}$",
]
consume_lines = [
    rf"^  consume {label:<28} MB/s {runs} \[{num}\]  ratio to local {num}  first record {num} ms"
    rf"  from assignment \[{num}\] MB/s$"
    for label in ("local log", "remote, warm cache", "remote, cold, read-ahead", "remote, cold, no read-ahead")
] + [rf"^storage-local {m} {num}$" for m in ("read_ahead_started", "read_ahead_hits", "cache_misses")]

def check(name, patterns, absent=()):
    text = open(f"{out}/{name}.txt").read()
    for p in patterns:
        if not re.search(p, text, re.M):
            sys.exit(f"{name}: no line matching {p!r} in:\n{text}")
    for p in absent:
        if re.search(p, text, re.M):
            sys.exit(f"{name}: a line matching {p!r}, which --produce-only leaves out:\n{text}")
    return text

check("produce", produce_lines, absent=[r"^  consume "])
text = check("full", produce_lines + consume_lines)
misses = int(re.search(rf"^storage-local cache_misses {num}$", text, re.M).group(1))
if misses <= 0:
    sys.exit("the cold reads never missed the segment cache: nothing was read from the remote store")
print("tiered_read smoke: well-formed")
PY

# The documented command lines: each backquoted span naming tiered_read.sh,
# its placeholders (<...>) filled and its optional parts ([...]) taken.
python3 - "$repo/docs/benchmarks.md" >"$out/documented.txt" <<'PY'
import re, shlex, sys
md = open(sys.argv[1]).read()
for span in re.findall(r"`([^`]*tiered_read\.sh[^`]*)`", md):
    words = shlex.split(re.sub(r"<[^>]*>", "/placeholder", span).replace("[", " ").replace("]", " "))
    print("\t".join(words[words.index(next(w for w in words if w.endswith("tiered_read.sh"))) + 1:]))
PY
documented=$(wc -l <"$out/documented.txt")
[ "$documented" -ge 4 ] || { echo "only $documented tiered_read.sh commands found in docs/benchmarks.md" >&2; exit 1; }
help_text="$("$here/tiered_read.sh" --help)"
while IFS=$'\t' read -r -a args; do
    for a in ${args[@]+"${args[@]}"}; do
        case "$a" in
            --*) grep -qF -- "$a" <<<"$help_text" || { echo "tiered_read.sh --help does not name $a" >&2; exit 1; } ;;
        esac
    done
    rc=0
    "$here/tiered_read.sh" ${args[@]+"${args[@]}"} --build "$out/no-such-build" 2>"$out/err.txt" || rc=$?
    if [ "$rc" != 1 ] || ! grep -q "build cairnd, cairn-bench and the storage plugins" "$out/err.txt"; then
        echo "docs/benchmarks.md: tiered_read.sh ${args[*]-} was not taken (exit $rc): $(cat "$out/err.txt")" >&2
        exit 1
    fi
done <"$out/documented.txt"
echo "tiered_read smoke: $documented documented command lines parsed"

# cairn-segment-copy-cost (docs/benchmarks.md), tiny: every mode runs and
# copies every byte, by the way it names.
"$build/tools/bench/cairn-segment-copy-cost" --dir "$out" --mib 1 --copies 2 plain plain-wb kernel kernel-wb \
    >"$out/copy-cost.txt"
python3 - "$out/copy-cost.txt" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
assert [r["mode"] for r in rows] == ["plain", "plain-wb", "kernel", "kernel-wb"], rows
for r in rows:
    assert r["kernel_bytes"] + r["plain_bytes"] == 2 << 20, r
    assert r["mode"].startswith("kernel") or r["kernel_bytes"] == 0, r
print("segment copy cost smoke: 4 modes")
PY
