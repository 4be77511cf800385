#!/usr/bin/env python3
"""Cost of creating partitions on a single-node cairnd.

Starts one cairnd (broker and controller in one process) on a fresh data
dir, then for each N in --partitions: a CreateTopics v4 of one topic with N
partitions (or, with --grow, a topic of 1 partition grown to N by
CreatePartitions v1), timed from send to answer. With --strace, strace is
attached to cairnd for each request alone and its syscall counts (fsync,
fdatasync, openat, mkdir) are reported, with the per-partition ratio.

usage: tools/bench/create_cost.py [--partitions 1,100,1000,5000] [--grow]
           [--timeout-ms MS] [--strace] [--cairnd PATH] [--keep]
           [--expect-error CODE]
Prints one JSON line per request and a summary table on stderr; exits 1
when a request's error code is not CODE (default 0). Wrap it in
`flock /tmp/bench.lock` on a shared machine.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SYSCALLS = ("fsync", "fdatasync", "openat", "mkdir")


def kstr(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def frame(api_key, version, corr, body):
    header = struct.pack(">hhi", api_key, version, corr) + kstr("create-cost")
    msg = header + body
    return struct.pack(">i", len(msg)) + msg


def read_frame(sock):
    def exact(n):
        buf = b""
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("cairnd closed the connection")
            buf += chunk
        return buf

    (n,) = struct.unpack(">i", exact(4))
    return exact(n)


def parse_results(payload, has_throttle=True):
    """CreateTopics v4 / CreatePartitions v1: [name, error_code, message]."""
    pos = 4  # correlation id
    if has_throttle:
        pos += 4
    (count,) = struct.unpack_from(">i", payload, pos)
    pos += 4
    out = []
    for _ in range(count):
        (nlen,) = struct.unpack_from(">h", payload, pos)
        name = payload[pos + 2:pos + 2 + nlen].decode()
        pos += 2 + nlen
        (code,) = struct.unpack_from(">h", payload, pos)
        pos += 2
        (mlen,) = struct.unpack_from(">h", payload, pos)
        pos += 2 + max(mlen, 0)
        out.append((name, code))
    return out


def create_topics(sock, corr, name, partitions, timeout_ms):
    topic = kstr(name) + struct.pack(">ihii", partitions, 1, 0, 0)
    body = struct.pack(">i", 1) + topic + struct.pack(">i?", timeout_ms, False)
    sock.sendall(frame(19, 4, corr, body))
    return parse_results(read_frame(sock))


def create_partitions(sock, corr, name, total, timeout_ms):
    topic = kstr(name) + struct.pack(">ii", total, -1)
    body = struct.pack(">i", 1) + topic + struct.pack(">i?", timeout_ms, False)
    sock.sendall(frame(37, 1, corr, body))
    return parse_results(read_frame(sock))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def connect(port, deadline_s=60):
    end = time.time() + deadline_s
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=600)
        except OSError:
            if time.time() > end:
                raise
            time.sleep(0.1)


def strace_start(pid, out):
    proc = subprocess.Popen(["strace", "-f", "-c", "-e", "trace=" + ",".join(SYSCALLS), "-p", str(pid), "-o", out],
                            stderr=subprocess.PIPE)
    # strace prints "Process N attached" once per thread when it is ready.
    line = proc.stderr.readline()
    if b"attached" not in line:
        raise RuntimeError("strace did not attach: %r" % line)
    time.sleep(0.3)  # every thread attached
    return proc


def strace_stop(proc, out):
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    counts = {s: 0 for s in SYSCALLS}
    with open(out) as f:
        for line in f:
            m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$", line)
            if m and m.group(2) in counts:
                counts[m.group(2)] = int(m.group(1))
    return counts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", default="1,100,1000,5000")
    ap.add_argument("--grow", action="store_true", help="CreatePartitions from 1 to N instead of CreateTopics")
    ap.add_argument("--timeout-ms", type=int, default=60000)
    ap.add_argument("--strace", action="store_true")
    ap.add_argument("--cairnd", default=os.environ.get("CAIRND", os.path.join(REPO, "build/core/server/cairnd")))
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--expect-error", type=int, default=0)
    args = ap.parse_args()
    counts = [int(x) for x in args.partitions.split(",") if x]
    data = tempfile.mkdtemp(prefix="cairn-create-cost.")
    port = free_port()
    log = open(os.path.join(data, "cairnd.log"), "w")
    cairnd = subprocess.Popen([args.cairnd, "--override", "listeners=PLAINTEXT://127.0.0.1:%d" % port,
                               "--override", "log.dirs=%s/data" % data, "--override", "node.id=1"],
                              stdout=log, stderr=subprocess.STDOUT)
    rows = []
    try:
        sock = connect(port)
        corr = 0
        for n in counts:
            name = "cost-%d" % n
            if args.grow:
                corr += 1
                create_topics(sock, corr, name, 1, 60000)
            trace = None
            out = os.path.join(data, "strace-%d.txt" % n)
            if args.strace:
                trace = strace_start(cairnd.pid, out)
            corr += 1
            t0 = time.monotonic()
            if args.grow:
                res = create_partitions(sock, corr, name, n, args.timeout_ms)
            else:
                res = create_topics(sock, corr, name, n, args.timeout_ms)
            seconds = time.monotonic() - t0
            added = n - 1 if args.grow else n
            row = {"partitions": n, "added": added, "seconds": round(seconds, 4),
                   "ms_per_partition": round(seconds * 1000 / max(added, 1), 4), "error_code": res[0][1]}
            if trace:
                sc = strace_stop(trace, out)
                row.update(sc)
                row["fsyncs_per_partition"] = round((sc["fsync"] + sc["fdatasync"]) / max(added, 1), 2)
            rows.append(row)
            print(json.dumps(row), flush=True)
        sock.close()
    finally:
        cairnd.send_signal(signal.SIGTERM)
        try:
            cairnd.wait(timeout=120)
        except subprocess.TimeoutExpired:
            cairnd.kill()
        log.close()
        if args.keep:
            print("data kept in %s" % data, file=sys.stderr)
        else:
            shutil.rmtree(data, ignore_errors=True)
    keys = ["partitions", "seconds", "ms_per_partition", "error_code"]
    if args.strace:
        keys += ["fsync", "fdatasync", "openat", "mkdir", "fsyncs_per_partition"]
    print(" ".join("%12s" % k for k in keys), file=sys.stderr)
    for r in rows:
        print(" ".join("%12s" % r[k] for k in keys), file=sys.stderr)
    if len(rows) != len(counts) or any(r["error_code"] != args.expect_error for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
