"""Decode, encode and size functions of generated structs."""

from emit_codec import FIXED_SIZE, struct_is_pointer
from versions import cond_within, pick, version_cond

READERS = {
    "int8": "kafka_read_int8", "int16": "kafka_read_int16", "int32": "kafka_read_int32",
    "int64": "kafka_read_int64", "uint16": "kafka_read_uint16", "uint32": "kafka_read_uint32",
    "float64": "kafka_read_float64", "bool": "kafka_read_bool", "uuid": "kafka_read_uuid",
}
WRITERS = {
    "int8": "kafka_write_int8", "int16": "kafka_write_int16", "int32": "kafka_write_int32",
    "int64": "kafka_write_int64", "uint16": "kafka_write_uint16", "uint32": "kafka_write_uint32",
    "float64": "kafka_write_float64", "bool": "kafka_write_bool", "uuid": "kafka_write_uuid",
}


def indent(lines, n=1):
    pad = "    " * n
    return [pad + l if l else l for l in lines]


class RwEmitter:
    """Wraps a CodecEmitter; `active` is the set of versions a snippet runs in."""

    def __init__(self, codec):
        self.c = codec
        self.universe = codec.universe

    def cond(self, prop, active):
        return cond_within(prop, active, self.universe)

    # ------------------------------------------------------------------ decode

    def read_value(self, f, fv, dst, rd, active, compact_all, on_error):
        """Statements reading one value (not an array) into dst."""
        t = f.type
        cflex = "1" if compact_all else self.cond(fv.compact, active)
        cnull = self.cond(fv.nullable, active)
        if f.struct is not None:
            name = f.struct.cname
            if struct_is_pointer(f):
                lines = []
                body = [
                    "%s = kafka_arena_alloc(arena, sizeof(*%s));" % (dst, dst),
                    "if (!%s) {" % dst,
                    '    kafka_reader_fail(%s, "out of memory");' % rd,
                    "    " + on_error,
                    "}",
                    "if (%s_decode(%s, %s, version, arena) < 0)" % (name, dst, rd),
                    "    " + on_error,
                ]
                if cnull == "0":
                    return body
                marker = "kafka_read_int8(%s) < 0" % rd
                if cnull != "1":
                    marker = "(%s) && %s" % (cnull, marker)
                lines.append("if (%s) {" % marker)
                lines.append("    %s = NULL;" % dst)
                lines.append("} else {")
                lines.extend(indent(["if (%s->failed)" % rd, "    " + on_error] + body))
                lines.append("}")
                return lines
            return ["if (%s_decode(&%s, %s, version, arena) < 0)" % (name, dst, rd), "    " + on_error]
        if t in READERS:
            return ["%s = %s(%s);" % (dst, READERS[t], rd)]
        if t in ("string", "bytes"):
            base = "kafka_read_%s" % ("string" if t == "string" else "bytes")
            plain = pick(cnull, base.replace("kafka_read_", "kafka_read_nullable_"), base)
            compact = pick(cnull, base.replace("kafka_read_", "kafka_read_compact_nullable_"),
                           base.replace("kafka_read_", "kafka_read_compact_"))
            if cnull not in ("0", "1"):
                plain = "(%s)" % plain
                compact = "(%s)" % compact
            return ["%s = %s(%s);" % (dst, pick(cflex, compact, plain) if cflex in ("0", "1")
                                        else "((%s) ? %s : %s)" % (cflex, compact, plain), rd)]
        if t == "records":
            fn = pick(cflex, "kafka_read_compact_records", "kafka_read_records")
            lines = ["%s = (%s)(%s);" % (dst, fn, rd) if cflex not in ("0", "1") else "%s = %s(%s);" % (dst, fn, rd)]
            if cnull != "1":
                lines += ["if (%s.len < 0 && !(%s)) {" % (dst, cnull),
                          '    kafka_reader_fail(%s, "null records where not allowed");' % rd,
                          "    " + on_error, "}"]
            return lines
        raise ValueError(t)

    def min_size_expr(self, f, fv, active):
        """C expression for the fewest bytes of one element at `version`."""
        sizes = self.c.element_min_sizes(f, fv, active)
        if not sizes:
            return "1"
        by_size = {}
        for v, n in sizes.items():
            by_size.setdefault(n, set()).add(v)
        # The most common size is the fallback; the others get a condition.
        order = sorted(by_size, key=lambda n: (-len(by_size[n]), n))
        expr = str(order[0])
        for n in reversed(order[1:]):
            expr = "(%s) ? %d : %s" % (version_cond(by_size[n], self.universe), n, expr)
        return expr if len(order) == 1 else "(%s)" % expr

    def read_field(self, f, fv, dst, rd, active, compact_all, on_error):
        if not f.is_array:
            lines = self.read_value(f, fv, dst, rd, active, compact_all, on_error)
            if f.struct is None:
                lines += ["if (%s->failed)" % rd, "    " + on_error]
            return lines
        cflex = "1" if compact_all else self.cond(fv.compact, active)
        cnull = self.cond(fv.nullable, active)
        min_el = self.min_size_expr(f, fv, active)
        reader = pick(cflex, "kafka_read_compact_array_len", "kafka_read_array_len")
        if cflex not in ("0", "1"):
            reader = "(%s)" % reader
        lines = ["{",
                 "    size_t min_el = %s;" % min_el,
                 "    int32_t n = %s(%s, min_el);" % (reader, rd),
                 "    if (%s->failed)" % rd,
                 "        " + on_error,
                 "    if (n < 0) {"]
        if cnull == "0":
            lines += ['        kafka_reader_fail(%s, "null array where not allowed");' % rd,
                      "        " + on_error]
        elif cnull != "1":
            lines += ["        if (!(%s)) {" % cnull,
                      '            kafka_reader_fail(%s, "null array where not allowed");' % rd,
                      "            " + on_error,
                      "        }"]
        lines += ["        %s = NULL;" % dst,
                  "        %s_count = -1;" % dst,
                  "    } else if (n > 0) {",
                  "        %s = kafka_arena_alloc(arena, (size_t)n * sizeof(*%s));" % (dst, dst),
                  "        if (!%s) {" % dst,
                  '            kafka_reader_fail(%s, "out of memory");' % rd,
                  "            " + on_error,
                  "        }",
                  "        %s_count = n;" % dst]
        el = self.read_value(f, fv, "%s[i]" % dst, rd, active, compact_all, on_error)
        if f.struct is not None:
            # The elements after this one need min_el bytes each, so the
            # arrays inside this one may not count those bytes as theirs.
            lines += ["        size_t outer_reserved = %s->reserved;" % rd,
                      "        for (int32_t i = 0; i < n; i++) {",
                      "            %s->reserved = outer_reserved + (size_t)(n - 1 - i) * min_el;" % rd]
            lines += indent(el, 3)
            lines += ["        }",
                      "        %s->reserved = outer_reserved;" % rd]
        else:
            lines += ["        for (int32_t i = 0; i < n; i++) {"]
            lines += indent(el, 3)
            lines += ["        }"]
        if f.struct is None:
            lines += ["        if (%s->failed)" % rd, "            " + on_error]
        lines += ["    } else {",
                  "        %s = NULL;" % dst,
                  "        %s_count = 0;" % dst,
                  "    }",
                  "}"]
        return lines

    def emit_decode(self, sd, out, public):
        m = self.c.m
        name = sd.cname
        storage = "" if public else "static "
        out.append("%sint %s_decode(struct %s *m, struct kafka_reader *r, int16_t version, struct kafka_arena *arena)"
                   % (storage, name, name))
        out.append("{")
        out.append("    (void)arena;")
        out.append("    (void)version;")
        out.append("    %s_init(m);" % name)
        if public:
            out.append("    if (version < %d || version > %d) {" % (m.valid.lo, m.valid.hi))
            out.append('        kafka_reader_fail(r, "%s: unsupported version %%d", version);' % m.name)
            out.append("        return -1;")
            out.append("    }")
        tagged = []
        for f in sd.fields:
            fv = self.c.versions(f)
            if fv.tagged:
                tagged.append(f)
            if not fv.regular:
                continue
            c = version_cond(fv.regular, self.universe)
            err = 'return kafka_reader_field_error(r, "%s");' % f.name
            body = self.read_field(f, fv, "m->" + f.cname, "r", fv.regular, False, err)
            if c == "1":
                out.extend(indent(body))
            else:
                out.append("    if (%s) {" % c)
                out.extend(indent(body, 2))
                out.append("    }")
        flex = {v for v in range(m.valid.lo, m.valid.hi + 1) if m.flexible.contains(v)}
        fc = version_cond(flex, self.universe)
        if fc != "0":
            lines = self.tagged_decode(sd, tagged) if tagged else ["kafka_reader_skip_tagged_fields(r);"]
            if fc == "1":
                out.extend(indent(lines))
            else:
                out.append("    if (%s) {" % fc)
                out.extend(indent(lines, 2))
                out.append("    }")
        out.append("    return r->failed ? -1 : 0;")
        out.append("}")
        out.append("")

    def tagged_decode(self, sd, tagged):
        lines = ["uint32_t tagged_count = kafka_read_uvarint(r);",
                 "for (uint32_t t = 0; t < tagged_count && !r->failed; t++) {",
                 "    uint32_t tag = kafka_read_uvarint(r);",
                 "    uint32_t tag_size = kafka_read_uvarint(r);",
                 "    if (r->failed)",
                 "        break;",
                 "    if (tag_size > kafka_reader_remaining(r)) {",
                 '        kafka_reader_fail(r, "tagged field %u: size %u exceeds remaining bytes", tag, tag_size);',
                 "        break;",
                 "    }",
                 "    struct kafka_reader sub;",
                 "    kafka_reader_init(&sub, r->data + r->pos, tag_size);",
                 "    switch (tag) {"]
        for f in sorted(tagged, key=lambda x: x.tag):
            fv = self.c.versions(f)
            c = version_cond(fv.tagged, self.universe)
            err = 'return kafka_reader_adopt_error(r, &sub, "%s");' % f.name
            body = self.read_field(f, fv, "m->" + f.cname, "(&sub)", fv.tagged, True, err)
            lines.append("    case %d:" % f.tag)
            if c == "1":
                lines.extend(indent(body, 2))
            else:
                lines.append("        if (%s) {" % c)
                lines.extend(indent(body, 3))
                lines.append("        }")
            lines.append("        break;")
        lines += ["    default:",
                  "        break;",
                  "    }",
                  "    r->pos += tag_size;",
                  "}"]
        return lines

    # ------------------------------------------------------------------ encode

    def write_value(self, f, fv, src, active, compact_all):
        t = f.type
        cflex = "1" if compact_all else self.cond(fv.compact, active)
        cnull = self.cond(fv.nullable, active)
        if f.struct is not None:
            name = f.struct.cname
            if struct_is_pointer(f):
                lines = ["if (%s == NULL) {" % src]
                if cnull != "1":
                    lines += ["    if (!(%s))" % cnull, "        return -1;"]
                lines += ["    kafka_write_int8(w, -1);", "} else {"]
                if cnull == "1":
                    lines.append("    kafka_write_int8(w, 1);")
                elif cnull != "0":
                    lines += ["    if (%s)" % cnull, "        kafka_write_int8(w, 1);"]
                lines += ["    if (%s_encode(%s, w, version) < 0)" % (name, src), "        return -1;", "}"]
                return lines
            return ["if (%s_encode(&%s, w, version) < 0)" % (name, src), "    return -1;"]
        if t in WRITERS:
            return ["%s(w, %s);" % (WRITERS[t], src)]
        lines = []
        if cnull != "1":
            check = "%s.len < 0" % src if cnull == "0" else "%s.len < 0 && !(%s)" % (src, cnull)
            lines += ["if (%s)" % check, "    return -1;"]
        if t in ("string", "bytes"):
            base = "kafka_write_" + t
            compact = "kafka_write_compact_" + t
        else:
            base, compact = "kafka_write_records", "kafka_write_compact_records"
        arg = "&" + src if t == "records" else src
        if cflex in ("0", "1"):
            lines.append("%s(w, %s);" % (pick(cflex, compact, base), arg))
        else:
            lines += ["if (%s)" % cflex, "    %s(w, %s);" % (compact, arg), "else",
                      "    %s(w, %s);" % (base, arg)]
        return lines

    def write_field(self, f, fv, src, active, compact_all):
        if not f.is_array:
            return self.write_value(f, fv, src, active, compact_all)
        cflex = "1" if compact_all else self.cond(fv.compact, active)
        cnull = self.cond(fv.nullable, active)
        writer = pick(cflex, "kafka_write_compact_array_len", "kafka_write_array_len")
        if cflex not in ("0", "1"):
            writer = "(%s)" % writer
        lines = ["if (%s_count < 0) {" % src]
        if cnull != "1":
            if cnull == "0":
                lines.append("    return -1;")
            else:
                lines += ["    if (!(%s))" % cnull, "        return -1;"]
        if cnull != "0":
            lines.append("    %s(w, -1);" % writer)
        lines += ["} else {",
                  "    if (%s_count > 0 && !%s)" % (src, src),
                  "        return -1;",
                  "    %s(w, %s_count);" % (writer, src),
                  "    for (int32_t i = 0; i < %s_count; i++) {" % src]
        lines += indent(self.write_value(f, fv, "%s[i]" % src, active, compact_all), 2)
        lines += ["    }", "}"]
        return lines

    def emit_encode(self, sd, out, public):
        m = self.c.m
        name = sd.cname
        storage = "" if public else "static "
        out.append("%sint %s_encode(const struct %s *m, struct kafka_writer *w, int16_t version)"
                   % (storage, name, name))
        out.append("{")
        out.append("    (void)m;")
        out.append("    (void)version;")
        if public:
            out.append("    if (version < %d || version > %d)" % (m.valid.lo, m.valid.hi))
            out.append("        return -1;")
        tagged = []
        for f in sd.fields:
            fv = self.c.versions(f)
            if fv.tagged:
                tagged.append(f)
            if fv.absent and fv.present and not f.ignorable:
                # A non-default value that the version cannot carry is an error.
                c = version_cond(fv.absent, self.universe)
                out.append("    if ((%s) && !(%s))" % (c, self.c.is_default_expr(f, "m->" + f.cname)))
                out.append("        return -1;")
            if not fv.regular:
                continue
            c = version_cond(fv.regular, self.universe)
            body = self.write_field(f, fv, "m->" + f.cname, fv.regular, False)
            if c == "1":
                out.extend(indent(body))
            else:
                out.append("    if (%s) {" % c)
                out.extend(indent(body, 2))
                out.append("    }")
        flex = {v for v in range(m.valid.lo, m.valid.hi + 1) if m.flexible.contains(v)}
        fc = version_cond(flex, self.universe)
        if fc != "0":
            lines = self.tagged_encode(tagged) if tagged else ["kafka_write_uvarint(w, 0);"]
            if fc == "1":
                out.extend(indent(lines))
            else:
                out.append("    if (%s) {" % fc)
                out.extend(indent(lines, 2))
                out.append("    }")
        out.append("    return w->failed ? -1 : 0;")
        out.append("}")
        out.append("")

    def tagged_write_cond(self, f, fv):
        c = version_cond(fv.tagged, self.universe)
        d = "!(%s)" % self.c.is_default_expr(f, "m->" + f.cname)
        return d if c == "1" else "(%s) && %s" % (c, d)

    def tagged_encode(self, tagged):
        tagged = sorted(tagged, key=lambda x: x.tag)
        lines = ["uint32_t tagged_count = 0;"]
        for f in tagged:
            fv = self.c.versions(f)
            lines += ["if (%s)" % self.tagged_write_cond(f, fv), "    tagged_count++;"]
        lines.append("kafka_write_uvarint(w, tagged_count);")
        for f in tagged:
            fv = self.c.versions(f)
            lines.append("if (%s) {" % self.tagged_write_cond(f, fv))
            lines.append("    size_t field_size = 0;")
            lines += indent(self.size_field(f, fv, "m->" + f.cname, fv.tagged, True, "field_size"))
            lines.append("    kafka_write_uvarint(w, %d);" % f.tag)
            lines.append("    kafka_write_uvarint(w, (uint32_t)field_size);")
            lines += indent(self.write_field(f, fv, "m->" + f.cname, fv.tagged, True))
            lines.append("}")
        return lines

    # -------------------------------------------------------------------- size

    def size_value(self, f, fv, src, active, compact_all, acc):
        t = f.type
        cflex = "1" if compact_all else self.cond(fv.compact, active)
        cnull = self.cond(fv.nullable, active)
        if f.struct is not None:
            name = f.struct.cname
            if struct_is_pointer(f):
                lines = []
                if cnull == "1":
                    lines.append("%s += 1;" % acc)
                elif cnull != "0":
                    lines += ["if (%s)" % cnull, "    %s += 1;" % acc]
                lines += ["if (%s)" % src, "    %s += %s_size(%s, version);" % (acc, name, src)]
                return lines
            return ["%s += %s_size(&%s, version);" % (acc, name, src)]
        if t in FIXED_SIZE:
            return ["%s += %d;" % (acc, FIXED_SIZE[t])]
        plain = 2 if t == "string" else 4
        compact = "kafka_uvarint_size(%s.len < 0 ? 0 : (uint32_t)%s.len + 1)" % (src, src)
        if cflex == "1":
            head = compact
        elif cflex == "0":
            head = str(plain)
        else:
            head = "((%s) ? %s : %d)" % (cflex, compact, plain)
        return ["%s += %s;" % (acc, head), "if (%s.len > 0)" % src, "    %s += (size_t)%s.len;" % (acc, src)]

    def size_field(self, f, fv, src, active, compact_all, acc):
        if not f.is_array:
            return self.size_value(f, fv, src, active, compact_all, acc)
        cflex = "1" if compact_all else self.cond(fv.compact, active)
        compact = "kafka_uvarint_size(%s_count < 0 ? 0 : (uint32_t)%s_count + 1)" % (src, src)
        if cflex == "1":
            head = compact
        elif cflex == "0":
            head = "4"
        else:
            head = "((%s) ? %s : 4)" % (cflex, compact)
        lines = ["%s += %s;" % (acc, head)]
        if f.struct is None and f.type in FIXED_SIZE:
            lines += ["if (%s_count > 0)" % src,
                      "    %s += (size_t)%s_count * %d;" % (acc, src, FIXED_SIZE[f.type])]
            return lines
        lines.append("for (int32_t i = 0; i < %s_count; i++) {" % src)
        lines += indent(self.size_value(f, fv, "%s[i]" % src, active, compact_all, acc))
        lines.append("}")
        return lines

    def emit_size(self, sd, out, public):
        m = self.c.m
        name = sd.cname
        storage = "" if public else "static "
        out.append("%ssize_t %s_size(const struct %s *m, int16_t version)" % (storage, name, name))
        out.append("{")
        out.append("    size_t n = 0;")
        out.append("    (void)m;")
        out.append("    (void)version;")
        tagged = []
        for f in sd.fields:
            fv = self.c.versions(f)
            if fv.tagged:
                tagged.append(f)
            if not fv.regular:
                continue
            c = version_cond(fv.regular, self.universe)
            body = self.size_field(f, fv, "m->" + f.cname, fv.regular, False, "n")
            if c == "1":
                out.extend(indent(body))
            else:
                out.append("    if (%s) {" % c)
                out.extend(indent(body, 2))
                out.append("    }")
        flex = {v for v in range(m.valid.lo, m.valid.hi + 1) if m.flexible.contains(v)}
        fc = version_cond(flex, self.universe)
        if fc != "0":
            lines = ["uint32_t tagged_count = 0;"]
            for f in sorted(tagged, key=lambda x: x.tag):
                fv = self.c.versions(f)
                lines.append("if (%s) {" % self.tagged_write_cond(f, fv))
                lines.append("    size_t field_size = 0;")
                lines += indent(self.size_field(f, fv, "m->" + f.cname, fv.tagged, True, "field_size"))
                lines.append("    tagged_count++;")
                lines.append("    n += kafka_uvarint_size(%d) + kafka_uvarint_size((uint32_t)field_size) + field_size;"
                             % f.tag)
                lines.append("}")
            lines.append("n += kafka_uvarint_size(tagged_count);")
            if fc == "1":
                out.extend(indent(lines))
            else:
                out.append("    if (%s) {" % fc)
                out.extend(indent(lines, 2))
                out.append("    }")
        out.append("    return n;")
        out.append("}")
        out.append("")
