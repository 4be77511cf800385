#!/usr/bin/env python3
"""Fails a CI test run whose skips could pass for passes.

usage: check_test_run.py JUNIT_XML ALLOWED_SKIPS

JUNIT_XML is ctest's --output-junit report. A test counts as skipped when
ctest did not run it or it exited with its skip code (77), or when its
output shows a cmocka skip ("[  SKIPPED ]"), which ctest reports as passed.
Every skipped test must be named in ALLOWED_SKIPS, and the run must hold at
least the "minimum-tests:" count that file states. Exit 0 when the run is
honest, 1 (with one line per problem) when not, 2 on bad input.
"""
import re
import sys
import xml.etree.ElementTree as ET

CMOCKA_SKIP = "[  SKIPPED ]"


def load_allowed(path):
    allowed, minimum = set(), None
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"#\s*minimum-tests:\s*(\d+)", line)
            if m:
                minimum = int(m.group(1))
                continue
            line = line.split("#", 1)[0].strip()
            if line:
                allowed.add(line.split()[0])
    return allowed, minimum


def skipped(case):
    if case.get("status") in ("notrun", "disabled"):
        return "not run"
    if case.find("skipped") is not None:
        return "skipped (exit code 77 or not run)"
    out = case.findtext("system-out") or ""
    if CMOCKA_SKIP in out:
        return "a cmocka test called skip()"
    return None


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        cases = ET.parse(argv[1]).getroot().iter("testcase")
        allowed, minimum = load_allowed(argv[2])
    except (OSError, ET.ParseError) as e:
        print(f"check_test_run: {e}", file=sys.stderr)
        return 2
    if minimum is None:
        print(f"check_test_run: {argv[2]} states no minimum-tests", file=sys.stderr)
        return 2
    problems, total = [], 0
    for case in cases:
        total += 1
        why = skipped(case)
        name = case.get("name")
        if why and name not in allowed:
            problems.append(f"{name}: {why}, and it is not in {argv[2]}")
    if total < minimum:
        problems.append(f"only {total} tests ran, fewer than the {minimum} expected: was a suite dropped?")
    for p in problems:
        print(f"check_test_run: {p}")
    if not problems:
        print(f"check_test_run: {total} tests, no skip outside the allowed list")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
