#!/usr/bin/env python3
"""Time one Fetch (v4) of partition 0 of a topic from an offset: the time
from sending the request to its whole answer, and the bytes of records it
carries. The request waits up to --max-wait-ms for at least one byte, so
against a remote segment not yet cached it measures the cold first fetch
(the download it needs included). Prints one JSON object.

usage: first_fetch.py HOST:PORT TOPIC [--offset 0] [--max-bytes 1048576]
                      [--max-wait-ms 30000]
"""
import argparse
import json
import socket
import struct
import time


def read_exact(sock, n):
    out = b""
    while len(out) < n:
        part = sock.recv(n - len(out))
        if not part:
            raise SystemExit("connection closed")
        out += part
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bootstrap")
    ap.add_argument("topic")
    ap.add_argument("--offset", type=int, default=0)
    ap.add_argument("--max-bytes", type=int, default=1 << 20)
    ap.add_argument("--max-wait-ms", type=int, default=30000)
    a = ap.parse_args()
    host, port = a.bootstrap.rsplit(":", 1)
    topic = a.topic.encode()
    client = b"first-fetch"
    body = struct.pack(">iiiib", -1, a.max_wait_ms, 1, a.max_bytes, 0)  # replica, wait, min, max, isolation
    body += struct.pack(">i", 1) + struct.pack(">h", len(topic)) + topic
    body += struct.pack(">i", 1) + struct.pack(">iqi", 0, a.offset, a.max_bytes)
    header = struct.pack(">hhi", 1, 4, 1) + struct.pack(">h", len(client)) + client  # Fetch v4, correlation 1
    request = header + body
    with socket.create_connection((host, int(port)), timeout=a.max_wait_ms / 1000 + 30) as sock:
        start = time.monotonic()
        sock.sendall(struct.pack(">i", len(request)) + request)
        size = struct.unpack(">i", read_exact(sock, 4))[0]
        answer = read_exact(sock, size)
        elapsed_ms = (time.monotonic() - start) * 1000
    # correlation, throttle, [topic [partition error hw lso [aborted] records]]
    pos = 4 + 4 + 4
    name_len = struct.unpack_from(">h", answer, pos)[0]
    pos += 2 + name_len + 4
    _, error, _, _ = struct.unpack_from(">ihqq", answer, pos)
    pos += 4 + 2 + 8 + 8
    aborted = struct.unpack_from(">i", answer, pos)[0]
    pos += 4 + max(aborted, 0) * 16
    records = struct.unpack_from(">i", answer, pos)[0]
    print(json.dumps({"topic": a.topic, "offset": a.offset, "error": error, "record_bytes": max(records, 0),
                      "ms": round(elapsed_ms, 1)}))


if __name__ == "__main__":
    main()
