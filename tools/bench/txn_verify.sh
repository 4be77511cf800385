#!/usr/bin/env bash
# The cost of transaction verification (KIP-890 part 1): transactional
# produce throughput with transaction.partition.verification.enable true and
# false, in alternating rounds (a fresh cairnd per round and setting, the
# order swapped each round), through txn.sh; prints the median per mode and
# setting and the ratio. Exits 1 when a mode has no completed run with one
# of the settings.
#
# usage: tools/bench/txn_verify.sh [CAIRND] [--bench PATH] [--rounds R]
#            [--records N] [--records-txn1 N] [--modes "txn-1 txn-100"] [--out DIR]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
rounds=3
modes="txn-1 txn-100"
out=""
pass=()
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds="$2"; shift ;;
        --modes) modes="$2"; shift ;;
        --out) out="$2"; shift ;;
        --bench|--records|--records-txn1|--record-size) pass+=("$1" "$2"); shift ;;
        -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "unknown option $1" >&2; exit 2 ;;
        *) pass+=("$1") ;;
    esac
    shift
done
[ -n "$out" ] || out="$(mktemp -d /tmp/cairn-bench-txn-verify.XXXXXX)"
mkdir -p "$out"

for round in $(seq 1 "$rounds"); do
    order=(true false)
    [ $((round % 2)) -eq 1 ] || order=(false true)
    for v in "${order[@]}"; do
        echo "round $round: verification $v" >&2
        "$here/txn.sh" "${pass[@]}" --rounds 1 --modes "$modes" --out "$out/$v-$round" \
            --override "transaction.partition.verification.enable=$v" >/dev/null
    done
done

python3 - "$out" "$rounds" $modes <<'PY' | tee "$out/summary.txt"
import json, statistics, sys
out, rounds, modes = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def rates(setting, mode):
    r = []
    for n in range(1, rounds + 1):
        try:
            with open(f"{out}/{setting}-{n}/{mode}-1.json") as f:
                j = json.load(f)
        except (OSError, ValueError):
            continue
        if "error" not in j:
            r.append(j["msgs_per_sec"])
    return r
missing = False
print(f"{'mode':<10} {'verify on msgs/s':>17} {'verify off msgs/s':>18} {'on/off':>7}  runs (on, off)")
for m in modes:
    on, off = rates("true", m), rates("false", m)
    mon = statistics.median(on) if on else None
    moff = statistics.median(off) if off else None
    ratio = f"{mon / moff:.3f}" if mon and moff else "-"
    fmt = lambda x: f"{x:,.0f}" if x else "-"
    print(f"{m:<10} {fmt(mon):>17} {fmt(moff):>18} {ratio:>7}  {len(on)}, {len(off)}")
    missing = missing or not on or not off
if missing:
    sys.exit("a mode has no completed run with one of the settings (see the rounds' JSON in " + out + ")")
PY
