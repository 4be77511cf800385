#!/usr/bin/env python3
"""Generates Cairn's C codecs from Kafka's JSON message schemas.

usage: protogen.py --schemas DIR --out core/protocol/generated [--test-out tests/unit/protocol]

Output is deterministic: the same schemas always give the same bytes.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from schema import SchemaLoader, SchemaError  # noqa: E402
from emit_codec import CodecEmitter, EmitError, GEN_BANNER  # noqa: E402
from emit_rw import RwEmitter  # noqa: E402
from emit_tables import emit_api_table, emit_errors  # noqa: E402
from emit_fill import emit_fill  # noqa: E402


def emit_message(m):
    codec = CodecEmitter(m)
    rw = RwEmitter(codec)
    guard = "CAIRN_PROTOCOL_GEN_%s_H" % m.cname.upper()
    h = [GEN_BANNER.rstrip("\n"),
         "/* Plain data with no internal locking: owned by whoever holds it. After a",
         " * decode, strings/bytes/records point into the reader's buffer and arrays",
         " * into the arena, so both must outlive the struct. */",
         "#ifndef " + guard, "#define " + guard, "",
         '#include "protocol/wire.h"', ""]
    for sd in m.structs:
        codec.emit_struct_def(sd, h)
    codec.emit_struct_def(m.top, h)
    for sd in m.structs:
        h.append("void %s_init(struct %s *m);" % (sd.cname, sd.cname))
    name = m.cname
    h += ["void %s_init(struct %s *m);" % (name, name),
          "int %s_decode(struct %s *m, struct kafka_reader *r, int16_t version, struct kafka_arena *arena);"
          % (name, name),
          "int %s_encode(const struct %s *m, struct kafka_writer *w, int16_t version);" % (name, name),
          "size_t %s_size(const struct %s *m, int16_t version);" % (name, name),
          "", "#endif", ""]
    c = [GEN_BANNER.rstrip("\n"),
         '#include "protocol/generated/%s.h"' % m.cname, "",
         "#include <string.h>", ""]
    for sd in m.structs:
        codec.emit_init(sd, c)
    codec.emit_init(m.top, c)
    for sd in m.structs:
        if sd.needs_is_default:
            codec.emit_is_default(sd, c)
    for sd in codec.reachable:
        rw.emit_size(sd, c, False)
        rw.emit_decode(sd, c, False)
        rw.emit_encode(sd, c, False)
    rw.emit_size(m.top, c, True)
    rw.emit_decode(m.top, c, True)
    rw.emit_encode(m.top, c, True)
    return "\n".join(h), "\n".join(c)


def write_if_changed(path, text, written):
    written.add(os.path.abspath(path))
    data = text.encode("utf-8")
    if os.path.exists(path):
        with open(path, "rb") as f:
            if f.read() == data:
                return
    with open(path, "wb") as f:
        f.write(data)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--schemas", required=True, help="folder holding message/, metadata/, ... and errors.tsv")
    ap.add_argument("--out", required=True, help="output folder for generated C (core/protocol/generated)")
    ap.add_argument("--test-out", help="folder for the generated round-trip fill code "
                    "(default: tests/unit/protocol next to --out, when it exists)")
    ap.add_argument("--overlay", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "schemas"),
                    help="folder of schemas replacing --schemas' files of the same name "
                    "(default: tools/protogen/schemas)")
    args = ap.parse_args()

    try:
        loader = SchemaLoader(args.schemas, args.overlay)
        messages = loader.load()
    except (SchemaError, OSError, ValueError) as e:
        print("protogen: %s" % e, file=sys.stderr)
        return 1

    os.makedirs(args.out, exist_ok=True)
    written = set()
    try:
        for m in messages:
            h, c = emit_message(m)
            write_if_changed(os.path.join(args.out, m.cname + ".h"), h, written)
            write_if_changed(os.path.join(args.out, m.cname + ".c"), c, written)
        for fname, text in emit_api_table(messages):
            write_if_changed(os.path.join(args.out, fname), text, written)
        for fname, text in emit_errors(os.path.join(args.schemas, "errors.tsv")):
            write_if_changed(os.path.join(args.out, fname), text, written)
    except (EmitError, SchemaError, OSError, ValueError) as e:
        print("protogen: %s" % e, file=sys.stderr)
        return 1

    # Drop generated files of schemas that no longer exist.
    for fn in sorted(os.listdir(args.out)):
        path = os.path.abspath(os.path.join(args.out, fn))
        if path in written or not fn.endswith((".c", ".h")):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            if f.readline().startswith(GEN_BANNER.rstrip("\n")):
                os.remove(path)

    test_out = args.test_out
    if test_out is None:
        guess = os.path.normpath(os.path.join(args.out, "..", "..", "..", "tests", "unit", "protocol"))
        if os.path.isdir(guess):
            test_out = guess
    if test_out:
        write_if_changed(os.path.join(test_out, "roundtrip_fill.inc"), emit_fill(messages), set())

    for old, new, source in loader.renamed:
        print("protogen: renamed %s -> %s (%s)" % (old, new, source), file=sys.stderr)
    print("protogen: %d schemas -> %s" % (len(messages), args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
