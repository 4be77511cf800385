#!/usr/bin/env python3
"""Runs librdkafka's numbered broker tests one test number at a time, each in
its own test-runner process with a timeout, and writes a summary.

Called by run.sh once the suite is built and a broker is listening; usable on
its own against any bootstrap address."""

import argparse
import concurrent.futures
import datetime
import os
import re
import signal
import subprocess
import sys
import time

ANSI = re.compile(r"\x1b\[[0-9;]*m")
# One row of the test-runner's summary table: "| 0001_multiobj | PASSED | 1.2s |"
SUMMARY_ROW = re.compile(r"^\|\s*(\d{4}_\S+)\s+\|\s+([A-Z]+)\s+\|\s+([0-9.]+)s\s*\|\s*(.*)$")
# A failure banner; the line after it says why.
FAILURE = re.compile(r'^### Test "(\d{4}_\w+)[^"]*" failed at ([^ ]+?)(?:\(\))? at .*###')
TEST_ENTRY = re.compile(r"_TEST\(\s*(\d{4}_\w+)\s*,\s*([^,)]*)")


def list_tests(test_c):
    """Returns [(name, flags_expression)] from the suite's test table."""
    text = open(test_c, encoding="utf-8", errors="replace").read()
    start = text.index("struct test tests[] = {")
    end = text.index("\n};", start)
    return TEST_ENTRY.findall(text[start:end])


def classify(flags, name=""):
    """Why a test is left out of a broker run, or None to run it."""
    words = set(re.findall(r"TEST_F_\w+", flags))
    if "TEST_F_LOCAL" in words:
        return "local"  # needs no broker (unit and mock-cluster tests)
    if name.endswith("_mock"):
        # Newer suites leave some mock-cluster tests unflagged (2.12: 0139,
        # 0150); they start their own mock cluster and never use the broker.
        return "mock cluster"
    if "TEST_F_MANUAL" in words:
        return "manual"
    # _WIN32 / _OSX variants are 0 on Linux.
    if "TEST_F_KNOWN_ISSUE" in words:
        return "known issue"
    return None


def run_one(number, args, log_dir):
    """Runs every broker test with this number; returns {name: (state, secs, note)}."""
    env = dict(os.environ)
    suite = os.path.abspath(args.suite)
    src = os.path.join(os.path.dirname(suite), "src")
    src_cpp = os.path.join(os.path.dirname(suite), "src-cpp")
    env["LD_LIBRARY_PATH"] = ":".join(filter(None, [src, src_cpp, env.get("LD_LIBRARY_PATH")]))
    env["RDKAFKA_TEST_CONF"] = os.path.abspath(args.conf)
    env["TESTS"] = number
    env["TEST_KAFKA_VERSION"] = args.kafka_version
    cmd = ["./test-runner", "-L", "-V", args.kafka_version]
    if args.quick:
        cmd.append("-Q")
    log_path = os.path.join(log_dir, number + ".log")
    started = time.monotonic()
    timed_out = False
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, cwd=suite, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            rc = proc.wait(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            rc = proc.wait()
    elapsed = time.monotonic() - started

    return parse_log(log_path, number, rc, timed_out, elapsed, args.timeout)


def parse_log(log_path, number, rc, timed_out, elapsed, timeout):
    """Outcome of each test in one test-runner log: {name: (state, secs, note)}."""
    results = {}
    failures = {}  # test name -> where and why, from failure banners
    with open(log_path, encoding="utf-8", errors="replace") as log:
        lines = [ANSI.sub("", line.rstrip("\n")) for line in log]
    for i, line in enumerate(lines):
        m = SUMMARY_ROW.match(line)
        if m:
            results[m.group(1)] = (m.group(2), float(m.group(3)), m.group(4).strip())
        m = FAILURE.match(line)
        if m and m.group(1) not in failures:
            why = lines[i + 1].strip() if i + 1 < len(lines) else ""
            failures[m.group(1)] = "%s: %s" % (m.group(2), why)
    if results:
        return results
    # A failing test aborts the runner before it prints its summary.
    if failures:
        state = "TIMEOUT" if timed_out else "FAILED"
        return {name: (state, elapsed, why) for name, why in failures.items()}
    if timed_out:
        return {number: ("TIMEOUT", elapsed, "killed after %ds" % timeout)}
    return {number: ("CRASHED", elapsed, "exit status %d, no summary" % rc)}


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--suite", required=True, help="librdkafka tests/ directory (built)")
    p.add_argument("--conf", required=True, help="test.conf naming the bootstrap servers")
    p.add_argument("--results", required=True, help="summary file to write")
    p.add_argument("--target", default="unknown", help="what is under test, for the report")
    p.add_argument("--kafka-version", default="3.9.0")
    p.add_argument("--timeout", type=int, default=120, help="seconds per test number")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--quick", action="store_true", help="pass -Q (fewer messages) to tests")
    p.add_argument("--tests", default="", help="comma-separated test numbers to run")
    p.add_argument("--reparse", action="store_true",
                   help="rebuild the summary from the logs of the last run, running nothing")
    args = p.parse_args()

    entries = list_tests(os.path.join(args.suite, "test.c"))
    wanted = set(t for t in args.tests.split(",") if t)
    excluded = {}
    numbers = []
    for name, flags in entries:
        number = name[:4]
        if wanted and number not in wanted:
            continue
        reason = classify(flags, name)
        if reason:
            excluded[name] = reason
        elif number not in numbers:
            numbers.append(number)

    log_dir = os.path.join(os.path.dirname(os.path.abspath(args.results)), "logs")  # next to the summary
    os.makedirs(log_dir, exist_ok=True)
    started = time.monotonic()
    results = {}
    if args.reparse:
        def run_one_or_reparse(number, args, log_dir):
            path = os.path.join(log_dir, number + ".log")
            if not os.path.exists(path):
                return {number: ("NOTRUN", 0.0, "no log")}
            return parse_log(path, number, -1, False, 0.0, args.timeout)
    else:
        run_one_or_reparse = run_one
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(run_one_or_reparse, n, args, log_dir): n for n in numbers}
        for fut in concurrent.futures.as_completed(futures):
            for name, outcome in fut.result().items():
                if name in excluded:
                    continue  # a local sibling sharing the number, filtered by -L
                results[name] = outcome
                print("%-40s %-8s %7.1fs %s" % (name, outcome[0], outcome[1], outcome[2][:80]),
                      flush=True)
    wall = time.monotonic() - started

    counts = {}
    lines = []
    lines.append("librdkafka test suite against %s" % args.target)
    lines.append("date: %s" % datetime.datetime.now().isoformat(timespec="seconds"))
    lines.append("suite: %s, broker version assumed %s, %s mode, %ds per test number, %d jobs"
                 % (os.path.basename(os.path.dirname(os.path.abspath(args.suite))),
                    args.kafka_version, "quick (-Q)" if args.quick else "full",
                    args.timeout, args.jobs))
    lines.append("")
    for name in sorted(results):
        state, secs, note = results[name]
        counts[state] = counts.get(state, 0) + 1
        lines.append("%-40s %-8s %7.1fs %s" % (name, state, secs, note[:160]))
    lines.append("")
    lines.append("not run (not broker tests): %d" % len(excluded))
    for name in sorted(excluded):
        lines.append("  %-38s %s" % (name, excluded[name]))
    lines.append("")
    total = sum(counts.values())
    lines.append("totals: %s; %d results in %.0fs" % (
        ", ".join("%s %d" % (k.lower(), counts[k]) for k in sorted(counts)), total, wall))
    text = "\n".join(lines) + "\n"
    with open(args.results, "w", encoding="utf-8") as out:
        out.write(text)
    print(lines[-1])
    print("summary written to %s" % args.results)
    return 0 if counts.get("PASSED", 0) == total else 1


if __name__ == "__main__":
    sys.exit(main())
