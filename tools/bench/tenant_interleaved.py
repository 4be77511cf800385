#!/usr/bin/env python3
"""Statistics of tenant_isolation.sh --interleaved.

The script runs the quiet tenant in many short phases, A (alone) and B
(beside the noisy tenant) in the order A B B A A B B A ..., and leaves per
phase the quiet tenant's cairn-bench report (phase-NN.json) and its
per-record due and acknowledgement times (phase-NN.timeline.csv), a
snapshot of the machine before and after the quiet run (phase-NN.snap)
and, for B phases, the noisy tenant's end offsets around it
(phase-NN.noisy); noisy-events.txt holds the noisy client's starts and
stops.

  tenant_interleaved.py analyse OUT QUOTA RECORD_SIZE [--clean-cpu F|median]
      writes OUT/summary.json and prints the tables.
  tenant_interleaved.py selftest
      checks the statistics on made-up phases (ctest).

Why this shape: on a shared machine the quiet tenant's p99 follows other
processes' load, which drifts over minutes. Alternating short phases in
one broker run spreads that drift over both kinds of phase; the A/A pairs
(adjacent A phases, which the A B B A order gives at every block edge) and
a permutation of the A/B labels say how far the ratio moves with no noisy
tenant at all, the noise floor the B/A ratio is read against.
"""
import json
import math
import os
import random
import statistics
import sys

RESAMPLES = 2000
SEED = 17
METRICS = ("p50_ms", "p99_ms", "p999_ms", "msgs_per_sec")


def phase_kind(index):
    """A B B A, repeated: phases 0 and 3 of every four are A."""
    return "A" if index % 4 in (0, 3) else "B"


def read_snapshot(path):
    """Two lines of key=value (before and after the quiet run)."""
    lines = [line.split() for line in open(path) if line.strip()]
    if len(lines) != 2:
        raise ValueError(f"{path}: {len(lines)} snapshot lines, want 2")
    return [dict(field.split("=", 1) for field in line) for line in lines]


def machine_load(before, after, client_cpu_s, ticks_per_second):
    """Busy CPU of the whole machine over the quiet run, less the broker's,
    the noisy client's and the quiet client's own: what other processes
    used, in CPUs (1.0 = one core busy all the time)."""
    wall = (float(after["wall"]) - float(before["wall"]))
    if wall <= 0:
        raise ValueError("snapshot wall clock did not advance")
    tick = lambda key: (int(after[key]) - int(before[key])) / ticks_per_second
    ours = tick("broker") + client_cpu_s
    if before.get("noisy", "-") != "-" and after.get("noisy", "-") != "-":
        ours += tick("noisy")
    load = {
        "wall_s": wall,
        "busy_cpus": tick("busy") / wall,
        "steal_cpus": tick("steal") / wall,
        "broker_cpus": tick("broker") / wall,
        "others_cpus": max(0.0, tick("busy") - ours) / wall,
        "load1_start": float(before["load1"]),
        "load1_end": float(after["load1"]),
    }
    if before.get("noisy", "-") != "-" and after.get("noisy", "-") != "-":
        load["noisy_cpus"] = tick("noisy") / wall
    if before.get("psi", "-") != "-" and after.get("psi", "-") != "-":
        # Share of the time at least one runnable task waited for a CPU.
        load["cpu_pressure"] = (int(after["psi"]) - int(before["psi"])) / 1e6 / wall
    if before.get("psi_io", "-") != "-" and after.get("psi_io", "-") != "-":
        # Share of the time at least one task waited for IO (the disk).
        load["io_pressure"] = (int(after["psi_io"]) - int(before["psi_io"])) / 1e6 / wall
    return load


def read_noisy_starts(path):
    """The wall clock (s) of each start of the noisy client, from
    noisy-events.txt ("start <epoch s>" / "stop <epoch s>")."""
    if not os.path.exists(path):
        return []
    return sorted(float(t) for kind, t in (line.split() for line in open(path) if line.strip()) if kind == "start")


def read_timeline(path):
    """(due ms, ack ms, latency ms) of every delivered record of a phase,
    from cairn-bench produce --timeline, in due order."""
    rows = []
    for line in open(path):
        if line.startswith("#") or line.startswith("due_ms"):
            continue
        due, ack, latency, _err = line.split(",")
        rows.append((float(due), float(ack), float(latency)))
    rows.sort()
    return rows


def worst_record(rows, noisy_starts, stall_ms):
    """Where the phase's slowest record was: its latency, its due time in
    seconds into the phase and after the noisy client's latest start (None
    before any), and how many records took longer than stall_ms."""
    if not rows:
        return {}
    due, _ack, latency = max(rows, key=lambda r: r[2])
    out = {"worst_ms": latency, "worst_at_s": (due - rows[0][0]) / 1e3,
           "records_over_stall_ms": sum(1 for r in rows if r[2] > stall_ms)}
    started = [t for t in noisy_starts if t * 1e3 <= due]
    if started:
        out["worst_after_noisy_start_s"] = (due - started[-1] * 1e3) / 1e3
    return out


STALL_MS = 100


def load_phases(out, quota, record_size, ticks_per_second):
    phases = []
    index = 0
    noisy_starts = read_noisy_starts(f"{out}/noisy-events.txt")
    while os.path.exists(f"{out}/phase-{index:02d}.json"):
        report = json.load(open(f"{out}/phase-{index:02d}.json"))
        before, after = read_snapshot(f"{out}/phase-{index:02d}.snap")
        client_cpu_s = report["client_cpu"]["total_ms"] / 1e3
        phase = {
            "index": index,
            "kind": phase_kind(index),
            "p50_ms": report["latency_ms"]["p50"],
            "p99_ms": report["latency_ms"]["p99"],
            "p999_ms": report["latency_ms"]["p999"],
            "msgs_per_sec": report["msgs_per_sec"],
            "records": report["records"],
            "failed": report["failed"],
            # How late the quiet client itself handed records over: a stall
            # here is the client's own (not scheduled), not the broker's.
            "send_lag_p99_ms": report["rate"]["send_lag_ms"]["p99"],
        }
        phase.update(machine_load(before, after, client_cpu_s, ticks_per_second))
        timeline = f"{out}/phase-{index:02d}.timeline.csv"
        if os.path.exists(timeline):
            phase.update(worst_record(read_timeline(timeline), noisy_starts, STALL_MS))
        noisy_path = f"{out}/phase-{index:02d}.noisy"
        if os.path.exists(noisy_path):
            (t0, off0), (t1, off1) = [map(int, line.split()) for line in open(noisy_path) if line.strip()]
            phase["noisy_bytes"] = (off1 - off0) * record_size
            phase["noisy_seconds"] = (t1 - t0) / 1e3
            phase["noisy_over_quota"] = phase["noisy_bytes"] / phase["noisy_seconds"] / quota
        phases.append(phase)
        index += 1
    return phases


def ratio_of_medians(a, b):
    return statistics.median(b) / statistics.median(a)


def percentile(sorted_values, q):
    """Nearest rank on sorted values."""
    k = min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values)) - 1))
    return sorted_values[k]


def bootstrap_interval(a, b, rng):
    """95 % interval of median(B) / median(A), A and B resampled apart."""
    ratios = sorted(ratio_of_medians(rng.choices(a, k=len(a)), rng.choices(b, k=len(b))) for _ in range(RESAMPLES))
    return percentile(ratios, 0.025), percentile(ratios, 0.975)


def permutation_null(a, b, rng):
    """The ratio of medians with the A/B labels shuffled: what it reads if
    the noisy tenant changes nothing. Returns the 95 % interval of that
    null and the two-sided p of the observed ratio (by |log ratio|)."""
    observed = abs(math.log(ratio_of_medians(a, b)))
    pooled = list(a) + list(b)
    ratios, extreme = [], 0
    for _ in range(RESAMPLES):
        rng.shuffle(pooled)
        r = ratio_of_medians(pooled[:len(a)], pooled[len(a):])
        ratios.append(r)
        if abs(math.log(r)) >= observed - 1e-12:
            extreme += 1
    ratios.sort()
    return (percentile(ratios, 0.025), percentile(ratios, 0.975)), (extreme + 1) / (RESAMPLES + 1)


def adjacent_ratios(phases, metric, first, second):
    """later / earlier for adjacent phases of kinds (first, second) in
    either order; for A and B the ratio is always B / A."""
    out = []
    for p, q in zip(phases, phases[1:]):
        kinds = {p["kind"], q["kind"]}
        if kinds != {first, second} or q["index"] != p["index"] + 1:
            continue
        if first == second:
            out.append(q[metric] / p[metric])
        else:
            a, b = (p, q) if p["kind"] == "A" else (q, p)
            out.append(b[metric] / a[metric])
    return out


def spread(values):
    if not values:
        return None
    return {"n": len(values), "median": statistics.median(values), "min": min(values), "max": max(values),
            "median_abs_log2": statistics.median(abs(math.log2(v)) for v in values)}


def compare(phases, metric, rng):
    a = [p[metric] for p in phases if p["kind"] == "A"]
    b = [p[metric] for p in phases if p["kind"] == "B"]
    if len(a) < 2 or len(b) < 2 or min(a + b) <= 0:
        return None
    (lo, hi) = bootstrap_interval(a, b, rng)
    null, p_value = permutation_null(a, b, rng)
    a_even, a_odd = a[0::2], a[1::2]
    return {
        "median_A": statistics.median(a), "median_B": statistics.median(b),
        "ratio_B_over_A": ratio_of_medians(a, b), "bootstrap_95": [lo, hi],
        "null_95": list(null), "p_value": p_value,
        "a_over_a_halves": ratio_of_medians(a_even, a_odd),
        "adjacent_B_over_A": spread(adjacent_ratios(phases, metric, "A", "B")),
        "adjacent_A_over_A": spread(adjacent_ratios(phases, metric, "A", "A")),
        "adjacent_B_over_B": spread(adjacent_ratios(phases, metric, "B", "B")),
    }


def verdict(c, bound):
    """Does the noisy tenant move the metric by more than `bound` (0.20),
    beyond the machine's noise? From the bootstrap interval of B / A."""
    if c is None:
        return "too few phases"
    lo, hi = c["bootstrap_95"]
    interval = f"(B / A {c['ratio_B_over_A']:.3f}, 95 % interval {lo:.3f} - {hi:.3f})"
    if lo > 1 + bound:
        return f"raised by more than {bound:.0%} {interval}"
    if hi < 1 - bound:
        return f"lowered by more than {bound:.0%} {interval}"
    if lo >= 1 - bound and hi <= 1 + bound:
        return f"moved by less than {bound:.0%} {interval}"
    if hi <= 1 + bound:
        return f"not raised by {bound:.0%} or more; a fall of more is not excluded {interval}"
    return f"undecided: the interval reaches past {1 + bound:.2f} {interval}"


def analyse(out, quota, record_size, clean_cpu):
    rng = random.Random(SEED)
    phases = load_phases(out, quota, record_size, os.sysconf("SC_CLK_TCK"))
    if not phases:
        sys.exit(f"tenant_interleaved: no phase-00.json in {out}")
    s = {"phases": phases, "quota": quota, "record_size": record_size, "clean_cpu": clean_cpu,
         "resamples": RESAMPLES, "seed": SEED}
    s["all"] = {m: compare(phases, m, rng) for m in METRICS}
    if clean_cpu == "median": # the quieter half of the phases
        clean_cpu = statistics.median(p["others_cpus"] for p in phases)
    clean_cpu = float(clean_cpu)
    s["clean_cpu"] = clean_cpu
    clean = [p for p in phases if p["others_cpus"] <= clean_cpu]
    s["clean_phases"] = [p["index"] for p in clean]
    s["clean"] = {m: compare(clean, m, rng) for m in ("p50_ms", "p99_ms")}
    # The first B phase of a block follows the noisy tenant's start (its
    # client filling its queue), the second is its steady state.
    s["first_B"] = compare([p for p in phases if p["kind"] == "A" or p["index"] % 4 == 1], "p99_ms", rng)
    s["second_B"] = compare([p for p in phases if p["kind"] == "A" or p["index"] % 4 == 2], "p99_ms", rng)
    b = [p for p in phases if "noisy_bytes" in p]
    if b:
        s["noisy_over_quota"] = sum(p["noisy_bytes"] for p in b) / sum(p["noisy_seconds"] for p in b) / quota
        s["noisy_over_quota_per_phase"] = [min(p["noisy_over_quota"] for p in b),
                                           max(p["noisy_over_quota"] for p in b)]
    s["verdict"] = {"p99_20pct": verdict(s["all"]["p99_ms"], 0.20),
                    "p99_20pct_clean": verdict(s["clean"]["p99_ms"], 0.20),
                    "p99_20pct_first_B": verdict(s["first_B"], 0.20),
                    "p99_20pct_second_B": verdict(s["second_B"], 0.20),
                    "throughput_5pct": verdict(s["all"]["msgs_per_sec"], 0.05)}
    if "noisy_over_quota" in s:
        s["verdict"]["noisy_10pct"] = ("within 10 % of its quota" if abs(s["noisy_over_quota"] - 1) < 0.10
                                       else "NOT within 10 % of its quota")
    json.dump(s, open(f"{out}/summary.json", "w"), indent=1)
    print_tables(s)


def print_tables(s):
    print("| phase | kind | p50 ms | p99 ms | p99.9 ms | records/s | client send lag p99 ms | others' CPUs | steal CPUs "
          "| cpu pressure | io pressure | broker CPUs | noisy client CPUs | load1 start, end | noisy / quota "
          f"| slowest record ms (s into phase; s after noisy start) | records over {STALL_MS} ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for p in s["phases"]:
        pressure = f"{p['cpu_pressure']:.2f}" if "cpu_pressure" in p else "-"
        io_pressure = f"{p['io_pressure']:.2f}" if "io_pressure" in p else "-"
        noisy = f"{p['noisy_over_quota']:.3f}" if "noisy_over_quota" in p else ""
        noisy_cpus = f"{p['noisy_cpus']:.3f}" if "noisy_cpus" in p else ""
        worst = "-"
        if "worst_ms" in p:
            after = f"; {p['worst_after_noisy_start_s']:.2f}" if p["kind"] == "B" and "worst_after_noisy_start_s" in p else ""
            worst = f"{p['worst_ms']:.1f} ({p['worst_at_s']:.2f}{after})"
        print(f"| {p['index']} | {p['kind']} | {p['p50_ms']:.2f} | {p['p99_ms']:.2f} | {p['p999_ms']:.2f} "
              f"| {p['msgs_per_sec']:.0f} | {p['send_lag_p99_ms']:.2f} | {p['others_cpus']:.2f} | {p['steal_cpus']:.2f} "
              f"| {pressure} | {io_pressure} | {p['broker_cpus']:.3f} | {noisy_cpus} "
              f"| {p['load1_start']:.2f}, {p['load1_end']:.2f} | {noisy} | {worst} "
              f"| {p.get('records_over_stall_ms', '-')} |")
    print()
    print("| quiet tenant | median A | median B | B / A | bootstrap 95 % | shuffled labels 95 % (p) "
          "| A / A (halves) | adjacent B / A: median [min, max] | adjacent A / A | adjacent B / B |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    fmt = lambda sp: f"{sp['median']:.2f} [{sp['min']:.2f}, {sp['max']:.2f}] (n={sp['n']})" if sp else "-"
    rows = [(m, s["all"][m]) for m in METRICS] + [(f"{m}, clean phases", s["clean"][m]) for m in ("p50_ms", "p99_ms")]
    rows += [("p99_ms, first B of a block", s["first_B"]), ("p99_ms, second B of a block", s["second_B"])]
    for name, c in rows:
        if c is None:
            print(f"| {name} | too few phases | | | | | | | | |")
            continue
        print(f"| {name} | {c['median_A']:.2f} | {c['median_B']:.2f} | {c['ratio_B_over_A']:.3f} "
              f"| {c['bootstrap_95'][0]:.3f} - {c['bootstrap_95'][1]:.3f} "
              f"| {c['null_95'][0]:.3f} - {c['null_95'][1]:.3f} ({c['p_value']:.3f}) | {c['a_over_a_halves']:.3f} "
              f"| {fmt(c['adjacent_B_over_A'])} | {fmt(c['adjacent_A_over_A'])} | {fmt(c['adjacent_B_over_B'])} |")
    print()
    print(f"clean phases (others' CPUs at most {s['clean_cpu']:.2f}): {s['clean_phases']}")
    if "noisy_over_quota" in s:
        lo, hi = s["noisy_over_quota_per_phase"]
        print(f"noisy tenant over all B phases: {s['noisy_over_quota']:.3f} x its quota (per phase {lo:.3f} - {hi:.3f})")
    for k, v in s["verdict"].items():
        print(f"{k}: {v}")


def selftest():
    """Made-up phases with a known answer; fails if the statistics do not
    find a doubled p99, or find an effect where there is none."""
    rng = random.Random(1)
    def phases(b_factor, noise):
        out = []
        for i in range(24):
            kind = phase_kind(i)
            p99 = 6.0 * (b_factor if kind == "B" else 1.0) * math.exp(rng.gauss(0, noise))
            out.append({"index": i, "kind": kind, "p99_ms": p99})
        return out
    assert [phase_kind(i) for i in range(8)] == list("ABBAABBA")
    doubled = compare(phases(2.0, 0.1), "p99_ms", random.Random(SEED))
    assert doubled["bootstrap_95"][0] > 1.2, doubled
    assert doubled["p_value"] < 0.01, doubled
    assert verdict(doubled, 0.20).startswith("raised by more than 20%"), verdict(doubled, 0.20)
    same = compare(phases(1.0, 0.05), "p99_ms", random.Random(SEED))
    assert verdict(same, 0.20).startswith("moved by less than 20%"), (verdict(same, 0.20), same)
    assert same["null_95"][0] < 1 < same["null_95"][1], same
    noisy = compare(phases(1.0, 1.0), "p99_ms", random.Random(SEED))
    assert verdict(noisy, 0.20).startswith("undecided"), (verdict(noisy, 0.20), noisy)
    # 24 phases in A B B A order: 5 adjacent A/A pairs, 6 B/B, 12 A-B.
    assert same["adjacent_A_over_A"]["n"] == 5 and same["adjacent_B_over_B"]["n"] == 6
    assert same["adjacent_B_over_A"]["n"] == 12
    snap = [{"wall": "0", "busy": "0", "steal": "0", "broker": "0", "noisy": "-", "load1": "1.0", "psi": "0"},
            {"wall": "10", "busy": "1000", "steal": "100", "broker": "300", "noisy": "-", "load1": "2.0",
             "psi": "5000000"}]
    load = machine_load(snap[0], snap[1], 1.0, 100)
    assert abs(load["others_cpus"] - 0.6) < 1e-9 and abs(load["cpu_pressure"] - 0.5) < 1e-9, load
    assert "io_pressure" not in load, load
    snap[0]["psi_io"], snap[1]["psi_io"] = "0", "2000000"
    assert abs(machine_load(snap[0], snap[1], 1.0, 100)["io_pressure"] - 0.2) < 1e-9
    # A stall of 1.5 s 4 s into a phase that began 3 s after the noisy start.
    rows = [(1000.0 + i, 1003.0 + i + (1500.0 - (i - 4000) if 4000 <= i < 5500 else 0), 0.0) for i in range(10000)]
    rows = [(d, a, a - d) for d, a, _ in rows]
    w = worst_record(rows, [0.997, 1.5], STALL_MS)
    assert w["worst_ms"] == 1503.0 and abs(w["worst_at_s"] - 4.0) < 1e-9, w
    assert abs(w["worst_after_noisy_start_s"] - 3.5) < 1e-9 and w["records_over_stall_ms"] == 1403, w
    assert "worst_after_noisy_start_s" not in worst_record(rows, [], STALL_MS)
    print("tenant_interleaved selftest: ok")


def main(argv):
    if len(argv) == 2 and argv[1] == "selftest":
        selftest()
        return
    if len(argv) >= 5 and argv[1] == "analyse":
        clean_cpu = "median"
        if len(argv) == 7 and argv[5] == "--clean-cpu":
            clean_cpu = argv[6]
        elif len(argv) != 5:
            sys.exit(__doc__)
        analyse(argv[2], int(argv[3]), int(argv[4]), clean_cpu)
        return
    sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
