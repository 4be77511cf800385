#!/usr/bin/env bash
# Smoke run of tenant_isolation.sh --interleaved (ctest
# tools_tenant_interleaved_smoke): four phases of 2 s in A B B A order, then
# the output is checked for form only (every quiet phase complete, every
# figure a finite number, the noisy tenant measured in the B phases and
# absent from the A phases), never for timing.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$(mktemp -d "${TMPDIR:-/tmp}/cairn-tenant-interleaved-smoke.XXXXXX")"
trap 'rm -rf "$out"' EXIT
repo="$(cd "$here/../.." && pwd)"

# Every tenant_isolation.sh command line in docs/benchmarks.md (backquoted,
# optional parts taken, placeholders filled) is taken by the option parsing:
# with no cairnd to run it must stop at the binaries (exit 1), not at its
# arguments (exit 2).
python3 - "$repo/docs/benchmarks.md" > "$out/documented.txt" <<'PY'
import re, shlex, sys
fill = {"PAIRS": "2", "LIST": "0", "DIR": "/tmp/placeholder", "B": "2097152"}
md = open(sys.argv[1]).read()
fence = r"```[a-z]*\n(.*?)```"
spans = [b for b in re.findall(fence, md, re.S) if "tenant_isolation.sh" in b]
spans += re.findall(r"`([^`]*tenant_isolation\.sh[^`]*)`", re.sub(fence, "", md, flags=re.S))
for span in spans:
    text = span.replace("[", " ").replace("]", " ").replace("...", " ")
    words = [fill.get(w, w) for w in shlex.split(text)]
    print("\t".join(words[words.index(next(w for w in words if w.endswith("tenant_isolation.sh"))) + 1:]))
PY
documented=$(wc -l < "$out/documented.txt")
[ "$documented" -ge 3 ] || { echo "only $documented tenant_isolation.sh commands in docs/benchmarks.md" >&2; exit 1; }
while IFS=$'\t' read -r -a args; do
    rc=0
    CAIRND="$out/no-such-cairnd" "$here/tenant_isolation.sh" ${args[@]+"${args[@]}"} 2> "$out/err.txt" || rc=$?
    if [ "$rc" != 1 ] || ! grep -q "is missing (build first)" "$out/err.txt"; then
        echo "docs/benchmarks.md: tenant_isolation.sh ${args[*]-} was not taken (exit $rc): $(cat "$out/err.txt")" >&2
        exit 1
    fi
done < "$out/documented.txt"
echo "tenant_interleaved smoke: $documented documented command lines parsed"

"$here/tenant_isolation.sh" --interleaved 2 --phase-seconds 2 --settle-seconds 1 --quiet-rate 200 --out "$out" |
    tee "$out/stdout.txt"
python3 - "$out" <<'PY'
import json, math, re, sys
out = sys.argv[1]
s = json.load(open(f"{out}/summary.json"))
def number(v, what):
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v < 0:
        sys.exit(f"{what} is not a finite number: {v!r}")
phases = s["phases"]
if [p["kind"] for p in phases] != list("ABBA"):
    sys.exit(f"phase order {[p['kind'] for p in phases]}, want A B B A")
for p in phases:
    if p["records"] != 200 * 2 or p["failed"] != 0:
        sys.exit(f"phase {p['index']}: {p['records']} records delivered, {p['failed']} failed")
    for k in ("p50_ms", "p99_ms", "p999_ms", "msgs_per_sec", "others_cpus", "busy_cpus", "broker_cpus", "wall_s"):
        number(p[k], f"phase {p['index']} {k}")
    if ("noisy_over_quota" in p) != (p["kind"] == "B"):
        sys.exit(f"phase {p['index']} ({p['kind']}): noisy tenant measured: {'noisy_over_quota' in p}")
    if p["kind"] == "B":
        number(p["noisy_over_quota"], f"phase {p['index']} noisy_over_quota")
        number(p["worst_after_noisy_start_s"], f"phase {p['index']} worst_after_noisy_start_s")
    for k in ("worst_ms", "worst_at_s", "records_over_stall_ms"):
        number(p[k], f"phase {p['index']} {k}")
    if "io_pressure" in p:
        number(p["io_pressure"], f"phase {p['index']} io_pressure")
    rows = [line for line in open(f"{out}/phase-{p['index']:02d}.timeline.csv") if line[0].isdigit()]
    if len(rows) != p["records"]:
        sys.exit(f"phase {p['index']}: {len(rows)} timeline rows for {p['records']} records")
events = [line.split()[0] for line in open(f"{out}/noisy-events.txt")]
if events != ["start", "stop"]:
    sys.exit(f"noisy-events.txt: {events}, want one start and one stop")
for m in ("p50_ms", "p99_ms", "msgs_per_sec"):
    c = s["all"][m]
    for k in ("median_A", "median_B", "ratio_B_over_A", "p_value", "a_over_a_halves"):
        number(c[k], f"{m}.{k}")
    lo, hi = c["bootstrap_95"]
    if not lo <= hi:
        sys.exit(f"{m}: bootstrap interval {lo} > {hi}")
number(s["noisy_over_quota"], "noisy_over_quota")
text = open(f"{out}/stdout.txt").read()
for pattern in (r"\| p99_ms \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|", r"p99_20pct: ", r"noisy tenant over all B phases: [0-9.]+ x"):
    if not re.search(pattern, text):
        sys.exit(f"no line matching {pattern!r} in the output")
print("tenant_interleaved smoke: well-formed")
PY
