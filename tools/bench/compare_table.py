#!/usr/bin/env python3
"""Prints compare.sh's side-by-side table from the JSON files it wrote.

usage: compare_table.py OUT_DIR RECORDS STARTUP_PARTITIONS HOLD_GB"""

import json
import os
import sys


def load(out, name):
    try:
        with open(os.path.join(out, name + ".json"), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def get(doc, *path):
    for key in path:
        if not isinstance(doc, dict) or key not in doc:
            return None
        doc = doc[key]
    return doc


def fmt(v, digits=1):
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return "{:,.{}f}".format(v, digits)
    return "{:,}".format(v)


def ratio(cairn, mock):
    if cairn is None or mock is None or not mock:
        return "n/a"
    return "%.2fx" % (cairn / mock)


def main():
    out, records, partitions, hold_gb = sys.argv[1:5]
    docs = {}
    for target in ("mock", "cairnd"):
        docs[target] = {
            "produce": load(out, target + "-produce"),
            "consume": load(out, target + "-consume"),
            "startup": load(out, target + "-startup"),
            "wait": load(out, target + "-wait"),
            "rss": load(out, target + "-rss"),
        }
    hold = load(out, "cairnd-hold")
    have_cairn = docs["cairnd"]["produce"] is not None

    rows = [
        ("produce records/s", ("produce", "msgs_per_sec"), 0),
        ("produce MB/s", ("produce", "mb_per_sec"), 1),
        ("produce latency p50 ms", ("produce", "latency_ms", "p50"), 2),
        ("produce latency p99 ms", ("produce", "latency_ms", "p99"), 2),
        ("produce latency p99.9 ms", ("produce", "latency_ms", "p999"), 2),
        ("produce broker CPU us/record", ("produce", "broker_cpu", "us_per_record"), 2),
        ("produce client CPU us/record", ("produce", "client_cpu", "us_per_record"), 2),
        ("produce records delivered", ("produce", "records"), 0),
        ("consume records/s", ("consume", "msgs_per_sec"), 0),
        ("consume MB/s", ("consume", "mb_per_sec"), 1),
        ("consume broker CPU us/record", ("consume", "broker_cpu", "us_per_record"), 2),
        ("consume records read", ("consume", "records"), 0),
        ("start-up, %s partitions, s" % partitions, ("startup", "seconds"), 2),
        ("broker RSS after runs, MiB", ("rss", "rss_kib"), 1),
    ]
    print("1 KiB records, one partition, acks=1, linger.ms=5, %s records" % records)
    print("%-34s %14s %14s %12s" % ("", "mock cluster", "cairnd", "cairnd/mock"))
    for label, path, digits in rows:
        values = []
        for target in ("mock", "cairnd"):
            v = get(docs[target][path[0]], *path[1:])
            if v is not None and path[-1] == "rss_kib":
                v = v / 1024.0
            if v is not None and digits == 0:
                v = int(round(v))
            values.append(v)
        cairn_text = fmt(values[1], digits) if have_cairn else "not measured"
        print("%-34s %14s %14s %12s" % (label, fmt(values[0], digits), cairn_text,
                                        ratio(values[1], values[0])))
    if hold:
        print("cairnd RSS holding %s GB of log: %s MiB after writing, %s MiB after restart" % (
            hold_gb, fmt((hold.get("rss_kib_after_write") or 0) / 1024.0),
            fmt((hold.get("rss_kib_after_restart") or 0) / 1024.0)))
    else:
        print("cairnd RSS holding %s GB of log: not measured" % hold_gb)
    print("the mock cluster keeps only the last ~5 MiB per partition in memory, so its "
          "consume run reads fewer records and it cannot hold a log")


if __name__ == "__main__":
    main()
