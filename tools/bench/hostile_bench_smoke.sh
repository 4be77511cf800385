#!/usr/bin/env bash
# Smoke run of tools/hostile-bench (ctest tools_hostile_bench_smoke): the
# --quick form with the good producer in open loop, as the documented runs
# do; the tool itself fails when the good producer or consumer loses,
# repeats or reorders a record. Then every hostile-bench command line in
# docs/benchmarks.md and README.md is parsed by the tool (pointed at
# binaries that do not exist, so it stops right after its option parsing):
# a flag the docs show and the tool no longer takes fails here.
#
# usage: tools/bench/hostile_bench_smoke.sh CAIRND CAIRN_BENCH
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cairnd="${1:?usage: hostile_bench_smoke.sh CAIRND CAIRN_BENCH}"
bench="${2:?usage: hostile_bench_smoke.sh CAIRND CAIRN_BENCH}"
tool="$repo/tools/hostile-bench"
out="$(mktemp -d "${TMPDIR:-/tmp}/cairn-hostile-smoke.XXXXXX")"
trap 'rm -rf "$out"' EXIT

python3 "$tool" --quick --producer-rate 20000 --cairnd "$cairnd" --bench "$bench"

# The documented command lines: lines of code blocks starting with
# tools/hostile-bench (with their backslash continuations) and backquoted
# spans naming it; optional parts ([...]) taken, of alternatives (a|b) the
# first, placeholders (N, key=value) filled.
python3 - "$repo/docs/benchmarks.md" "$repo/README.md" >"$out/documented.txt" <<'PY'
import re, shlex, sys
commands = []
for path in sys.argv[1:]:
    text = open(path).read()
    for block in re.findall(r"^```[^\n]*\n(.*?)^```", text, re.M | re.S):
        lines = block.split("\n")
        i = 0
        while i < len(lines):
            line = lines[i]
            if line.startswith("tools/hostile-bench"):
                cmd = line
                while cmd.endswith("\\") and i + 1 < len(lines):
                    i += 1
                    cmd = cmd[:-1] + " " + lines[i]
                commands.append(cmd)
            i += 1
    text_outside = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    commands += [s for s in re.findall(r"`([^`\n]*tools/hostile-bench[^`\n]*)`", text_outside)]
for cmd in commands:
    cmd = cmd.split("#")[0].replace("[", " ").replace("]", " ").replace("...", " ")
    cmd = cmd.replace("$PWD", "/placeholder")
    words = shlex.split(cmd)
    words = words[[i for i, w in enumerate(words) if w.endswith("tools/hostile-bench")][0] + 1:]
    filled = []
    for w in words:
        w = w.split("|")[0]
        if w == "N":
            w = "2"
        elif w == "key=value":
            w = "producer_byte_rate=1"
        filled.append(w)
    print("\t".join(filled))
PY
documented=$(wc -l <"$out/documented.txt")
[ "$documented" -ge 8 ] || { echo "only $documented hostile-bench commands found in docs/benchmarks.md and README.md" >&2; exit 1; }
while IFS=$'\t' read -r -a args; do
    rc=0
    python3 "$tool" ${args[@]+"${args[@]}"} --cairnd "$out/no-such-cairnd" 2>"$out/err.txt" || rc=$?
    if [ "$rc" != 1 ] || ! grep -q "no-such-cairnd.* not found: build cairnd" "$out/err.txt"; then
        echo "documented: hostile-bench ${args[*]-} was not taken (exit $rc): $(cat "$out/err.txt")" >&2
        exit 1
    fi
done <"$out/documented.txt"
echo "hostile-bench smoke: $documented documented command lines parsed"
