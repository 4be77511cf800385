"""Round-trip test support: functions that fill every field present in a
version with pseudo-random values, and a table of all top-level schemas.

The including test defines struct fill_ctx and the fill_* value helpers."""

from emit_codec import CodecEmitter, GEN_BANNER, struct_is_pointer
from emit_rw import indent
from versions import version_cond, cond_within

SCALAR_FILL = {
    "int8": "(int8_t)fill_u64(c)", "int16": "(int16_t)fill_u64(c)", "int32": "(int32_t)fill_u64(c)",
    "int64": "(int64_t)fill_u64(c)", "uint16": "(uint16_t)fill_u64(c)", "uint32": "(uint32_t)fill_u64(c)",
    "float64": "fill_double(c)", "bool": "(fill_u64(c) & 1) != 0", "uuid": "fill_uuid(c)",
    "string": "fill_str(c)", "bytes": "fill_bytes(c)", "records": "fill_records(c)",
}


def fill_value(codec, f, fv, dst, universe):
    cnull = cond_within(fv.nullable, fv.present, universe)
    if f.struct is not None:
        if struct_is_pointer(f):
            lines = []
            alloc = ["%s = kafka_arena_alloc(c->arena, sizeof(*%s));" % (dst, dst),
                     "if (%s)" % dst,
                     "    fill_%s(%s, version, c);" % (f.struct.cname, dst)]
            if cnull == "0":
                return alloc
            lines.append("if ((%s) && fill_chance(c, 4))" % cnull)
            lines.append("    %s = NULL;" % dst)
            lines.append("else {")
            lines += indent(alloc)
            lines.append("}")
            return lines
        return ["fill_%s(&%s, version, c);" % (f.struct.cname, dst)]
    val = SCALAR_FILL[f.type]
    if f.type in ("string", "bytes", "records") and cnull != "0":
        null_val = {"string": "fill_null_str()", "bytes": "fill_null_bytes()", "records": "fill_null_records()"}
        return ["%s = ((%s) && fill_chance(c, 5)) ? %s : %s;" % (dst, cnull, null_val[f.type], val)]
    return ["%s = %s;" % (dst, val)]


def fill_field(codec, f, fv, dst, universe):
    if not f.is_array:
        return fill_value(codec, f, fv, dst, universe)
    cnull = cond_within(fv.nullable, fv.present, universe)
    lines = []
    if cnull != "0":
        lines += ["if ((%s) && fill_chance(c, 5)) {" % cnull,
                  "    %s = NULL;" % dst,
                  "    %s_count = -1;" % dst,
                  "} else {"]
    body = ["int32_t n = (int32_t)(fill_u64(c) % 3);",
            "%s_count = 0;" % dst,
            "%s = n ? kafka_arena_alloc(c->arena, (size_t)n * sizeof(*%s)) : NULL;" % (dst, dst),
            "if (%s) {" % dst,
            "    %s_count = n;" % dst,
            "    for (int32_t i = 0; i < n; i++) {"]
    body += indent(fill_value(codec, f, fv, "%s[i]" % dst, universe), 2)
    body += ["    }", "}"]
    if cnull != "0":
        lines += indent(body) + ["}"]
    else:
        lines += ["{"] + indent(body) + ["}"]
    return lines


def emit_fill_struct(codec, sd, out):
    universe = codec.universe
    out.append("static void fill_%s(struct %s *m, int16_t version, struct fill_ctx *c)" % (sd.cname, sd.cname))
    out.append("{")
    out.append("    (void)version;")
    out.append("    (void)c;")
    out.append("    %s_init(m);" % sd.cname)
    for f in sd.fields:
        fv = codec.versions(f)
        if not fv.present:
            continue
        cnd = version_cond(fv.present, universe)
        body = fill_field(codec, f, fv, "m->" + f.cname, universe)
        if cnd == "1":
            out.extend(indent(body))
        else:
            out.append("    if (%s) {" % cnd)
            out.extend(indent(body, 2))
            out.append("    }")
    out.append("}")
    out.append("")


def emit_fill(messages):
    out = [GEN_BANNER.rstrip("\n"), "/* Included by test_roundtrip.c. */", ""]
    for m in messages:
        codec = CodecEmitter(m)
        for sd in codec.reachable:
            emit_fill_struct(codec, sd, out)
        emit_fill_struct(codec, m.top, out)
        name = m.cname
        out += ["static void fill_any_%s(void *m, int16_t v, struct fill_ctx *c) { fill_%s(m, v, c); }" % (name, name),
                "static int decode_any_%s(void *m, struct kafka_reader *r, int16_t v, struct kafka_arena *a)" % name,
                "{",
                "    return %s_decode(m, r, v, a);" % name,
                "}",
                "static int encode_any_%s(const void *m, struct kafka_writer *w, int16_t v)" % name,
                "{",
                "    return %s_encode(m, w, v);" % name,
                "}",
                "static size_t size_any_%s(const void *m, int16_t v) { return %s_size(m, v); }" % (name, name),
                ""]
    out.append("static const struct roundtrip_case roundtrip_cases[] = {")
    for m in messages:
        n = m.cname
        out.append('    {"%s", %d, %d, sizeof(struct %s), fill_any_%s, decode_any_%s, encode_any_%s, size_any_%s},'
                   % (m.name, m.valid.lo, m.valid.hi, n, n, n, n, n))
    out += ["};", ""]
    return "\n".join(out)
