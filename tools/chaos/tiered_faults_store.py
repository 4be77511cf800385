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
      id without its .log, noticed by inotify as it appears), or after 120 s;
      writes mid_copy=yes|no to OUT
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


def _inotify():
    """An inotify fd (IN_NONBLOCK) and its add_watch, or (None, None)."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            return None, None
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        return fd, lambda path: libc.inotify_add_watch(fd, os.fsencode(path), IN_CREATE | IN_MOVED_TO)
    except (OSError, AttributeError):
        return None, None


IN_CREATE, IN_MOVED_TO = 0x100, 0x80


def _object_dirs(backend, root, topic):
    """The folders a copy of the topic's partition 0 writes into, and their parents."""
    if backend == "storage-local":
        part = f"{root}/{topic}-0"
        return [root, part] + [f"{part}/{d}" for d in _listdir(part)]
    tops = [f"{root}/{d}" for d in _listdir(root) if d.startswith(topic + "-")]
    return [root] + tops + [f"{t}/0" for t in tops]


def _half_object(backend, name):
    """True when a new object's name shows a copy under way: a .tmp, or an
    object of a segment other than its .log (the .log is written last)."""
    if backend == "s3rver":
        if not name.endswith("._S3rver_object"):
            return False
        name = name[: -len("._S3rver_object")]
    m = NAME.match(name)
    return bool(m) and m.group(2) != MANIFEST_ID and (bool(m.group(4)) or m.group(3) != "log")


def kill_half(backend, root, topic, pid, out):
    """inotify names each new object the moment it appears (a copy can take
    a millisecond, shorter than a listing takes to notice); the store is
    also listed at each wake (an event, or 50 ms without one), for folders
    made before their watch was added."""
    import select
    deadline = time.monotonic() + 120
    caught = None
    fd, add_watch = _inotify()
    watched = set()
    while caught is None and time.monotonic() < deadline:
        if fd is not None:
            for d in _object_dirs(backend, root, topic):
                if d not in watched and add_watch(d) >= 0:
                    watched.add(d)
        found = orphans(backend, root, topic)
        if found:
            caught = found[0]
            break
        if fd is None:
            continue
        if not select.select([fd], [], [], 0.05)[0]:
            continue
        try:
            buf = os.read(fd, 65536)
        except BlockingIOError:
            continue
        at = 0
        while at + 16 <= len(buf):
            length = int.from_bytes(buf[at + 12:at + 16], "little")
            name = buf[at + 16:at + 16 + length].split(b"\0", 1)[0].decode(errors="replace")
            at += 16 + length
            if _half_object(backend, name):
                caught = name
                break
    os.kill(pid, signal.SIGKILL)
    if fd is not None:
        os.close(fd)
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
