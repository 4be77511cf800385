#!/usr/bin/env bash
# Smoke run of tenant_isolation.sh (ctest tools_tenant_isolation_smoke): a
# few seconds per phase, then the output is checked for form only (every
# figure a finite number, both quiet runs complete, the noisy tenant got
# records in), never for timing, which a loaded machine cannot promise.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$(mktemp -d "${TMPDIR:-/tmp}/cairn-tenant-smoke.XXXXXX")"
trap 'rm -rf "$out"' EXIT
"$here/tenant_isolation.sh" --seconds 3 --warmup-seconds 2 --quiet-rate 200 --out "$out" | tee "$out/stdout.txt"
python3 - "$out" <<'PY'
import json, math, re, sys
out = sys.argv[1]
s = json.load(open(f"{out}/summary.json"))
def number(v, what):
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v < 0:
        sys.exit(f"{what} is not a finite number: {v!r}")
for phase in ("quiet_alone", "quiet_beside"):
    for k in ("p50_ms", "p99_ms", "msgs_per_sec"):
        number(s[phase][k], f"{phase}.{k}")
    if s[phase]["msgs_per_sec"] <= 0:
        sys.exit(f"{phase}: no records")
for k in ("p50_ratio", "p99_ratio", "throughput_ratio", "noisy_over_quota", "noisy_bytes_per_sec"):
    number(s[k], k)
for i, v in enumerate(s["noisy_per_second_over_quota"]):
    number(v, f"noisy_per_second_over_quota[{i}]")
# Throttled, the noisy tenant may get nothing in during a 3 s window, but
# its first burst always lands.
timeline = [json.loads(line) for line in open(f"{out}/noisy-timeline.jsonl") if line.strip()]
if not timeline or timeline[-1]["end_offset_sum"] <= 0:
    sys.exit("the noisy tenant got no records into its topic")
for phase in ("alone", "beside"):
    r = json.load(open(f"{out}/quiet-{phase}.json"))
    if r["failed"] != 0 or r["records"] != 200 * 3:
        sys.exit(f"quiet {phase}: {r['records']} records delivered, {r['failed']} failed")
text = open(f"{out}/stdout.txt").read()
num = r"[0-9]+(\.[0-9]+)?"
for pattern in (rf"\| p99 ms \| {num} \| {num} \| {num} \((NOT )?met", rf"\| records/s \| {num} \| {num} \| {num} \(",
                rf"noisy tenant: {num} B/s over {num} s = {num} x its quota"):
    if not re.search(pattern, text):
        sys.exit(f"no line matching {pattern!r} in the output")
print("tenant_isolation smoke: well-formed")
PY
