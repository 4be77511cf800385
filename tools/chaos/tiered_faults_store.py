#!/usr/bin/env python3
"""What the remote store of a tools/chaos/tiered-faults run holds, read from
its directory: storage-local's <root>/<topic>-0/<topic id>/<name>, or
s3rver's <root>/<topic>-<topic id>/0/<name>._S3rver_object (root is then
the bucket's folder). Names are <base, 20 digits>-<segment id, 32 hex>.<kind>
(storage-local writes <name>.tmp first). During a storage-local outage the
store sits at <root>.away.

  tiered_faults_store.py BACKEND ROOT logs TOPIC      "<base> <segment id>" of each .log
  tiered_faults_store.py BACKEND ROOT orphans TOPIC   objects of no whole copy (.tmp, or no .log)
  tiered_faults_store.py BACKEND ROOT watch DATA OUT TOPIC...
      every 0.1 s: a local segment (DATA/<topic>-0/<base>.log) that is gone
      must have its .log in the store; writes "checked N bad M" lines
  tiered_faults_store.py BACKEND ROOT kill-half TOPIC PID OUT
      SIGKILLs PID at the first half-done copy seen (an object of a segment
      id without its .log), or after 120 s; writes mid_copy=yes|no to OUT
"""
import os
import re
import signal
import sys
import time

MANIFEST_ID = "f" * 32  # storage-local's partition manifest, not a segment
NAME = re.compile(r"^(\d{20})-([0-9a-f]{32})\.([a-z-]+)(\.tmp)?$")


def objects(backend, root, topic):
    """Normalised object names of the topic's partition 0."""
    names = []
    for top in (root, root + ".away"):
        if backend == "storage-local":
            dirs = [f"{top}/{topic}-0/{d}" for d in _listdir(f"{top}/{topic}-0")]
        else:
            dirs = [f"{top}/{d}/0" for d in _listdir(top) if d.startswith(topic + "-")]
        for d in dirs:
            for n in _listdir(d):
                if backend == "s3rver":
                    if not n.endswith("._S3rver_object"):
                        continue
                    n = n[: -len("._S3rver_object")]
                m = NAME.match(n)
                if m and m.group(2) != MANIFEST_ID:
                    names.append(m)
    return names


def _listdir(path):
    try:
        return os.listdir(path)
    except OSError:  # missing, or a plain file during an outage
        return []


def logs(backend, root, topic):
    return sorted({(m.group(1), m.group(2)) for m in objects(backend, root, topic)
                   if m.group(3) == "log" and not m.group(4)})


def orphans(backend, root, topic):
    names = objects(backend, root, topic)
    whole = {m.group(2) for m in names if m.group(3) == "log" and not m.group(4)}
    return [m.group(0) for m in names if m.group(4) or m.group(2) not in whole]


def watch(backend, root, data, out, topics):
    seg = re.compile(r"^(\d{20})\.log$")
    seen, checked, bad = {}, 0, 0
    with open(out, "w", buffering=1) as f:
        while True:
            for topic in topics:
                now = {m.group(1) for m in map(seg.match, _listdir(f"{data}/{topic}-0")) if m}
                gone = seen.get(topic, set()) - now
                if gone:
                    have = {b for b, _ in logs(backend, root, topic)}
                    for b in sorted(gone):
                        checked += 1
                        if b not in have:
                            bad += 1
                            f.write(f"deleted-before-copy {topic} {b}\n")
                seen[topic] = now
            f.write(f"checked {checked} bad {bad}\n")
            time.sleep(0.1)


def kill_half(backend, root, topic, pid, out):
    deadline = time.monotonic() + 120
    caught = None
    while caught is None and time.monotonic() < deadline:
        found = orphans(backend, root, topic)
        caught = found[0] if found else None
    os.kill(pid, signal.SIGKILL)
    with open(out, "w") as f:
        f.write(f"mid_copy={'yes' if caught else 'no'} object={caught or '-'}\n")


def main(argv):
    backend, root, cmd = argv[1:4]
    if cmd == "logs":
        for base, seg_id in logs(backend, root, argv[4]):
            print(base, seg_id)
    elif cmd == "orphans":
        print(len(orphans(backend, root, argv[4])))
    elif cmd == "watch":
        watch(backend, root, argv[4], argv[5], argv[6:])
    elif cmd == "kill-half":
        kill_half(backend, root, argv[4], int(argv[5]), argv[6])
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main(sys.argv)
