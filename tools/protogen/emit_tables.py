"""API and metadata-record lookup tables, the umbrella header, and errors."""

import csv

from emit_codec import GEN_BANNER, EmitError, c_string_literal

API_DESC = """/* One Kafka API: version range, header rules and generic codec entry points.
 * Immutable, shared by all threads. */
struct kafka_api_desc {
    int16_t api_key;
    const char *name;            /* "Produce" */
    int16_t min_version, max_version;
    int16_t flexible_min;        /* first flexible version, -1 if never */
    bool latest_unstable;        /* max_version is still in development */
    const char *listeners;       /* "zkBroker,broker" */
    size_t request_size_of, response_size_of;
    void (*request_init)(void *msg);
    int (*request_decode)(void *msg, struct kafka_reader *r, int16_t version, struct kafka_arena *arena);
    int (*request_encode)(const void *msg, struct kafka_writer *w, int16_t version);
    size_t (*request_size)(const void *msg, int16_t version);
    void (*response_init)(void *msg);
    int (*response_decode)(void *msg, struct kafka_reader *r, int16_t version, struct kafka_arena *arena);
    int (*response_encode)(const void *msg, struct kafka_writer *w, int16_t version);
    size_t (*response_size)(const void *msg, int16_t version);
};

/* One KRaft metadata record type. Immutable, shared by all threads. */
struct kafka_record_desc {
    int16_t record_type;
    const char *name;            /* "TopicRecord" */
    int16_t min_version, max_version;
    int16_t flexible_min;
    size_t size_of;
    void (*init)(void *msg);
    int (*decode)(void *msg, struct kafka_reader *r, int16_t version, struct kafka_arena *arena);
    int (*encode)(const void *msg, struct kafka_writer *w, int16_t version);
    size_t (*size)(const void *msg, int16_t version);
};

/* NULL when the API key is unknown. */
const struct kafka_api_desc *kafka_api_lookup(int16_t api_key);
/* Number of known APIs, and the i-th one in api-key order (NULL if out of range). */
int kafka_api_count(void);
const struct kafka_api_desc *kafka_api_at(int index);
/* Request header version for an API version (2 flexible, 1 otherwise,
 * 0 for ControlledShutdown v0); -1 for an unknown API. */
int16_t kafka_request_header_version(int16_t api_key, int16_t api_version);
/* Response header version (1 flexible, 0 otherwise; ApiVersions always 0);
 * -1 for an unknown API. */
int16_t kafka_response_header_version(int16_t api_key, int16_t api_version);

/* NULL when the record type is unknown. */
const struct kafka_record_desc *kafka_metadata_record_lookup(int16_t record_type);
int kafka_metadata_record_count(void);
const struct kafka_record_desc *kafka_metadata_record_at(int index);
"""


def generic_wrappers(name, out):
    out += ["static void %s_init_any(void *m) { %s_init(m); }" % (name, name),
            "static int %s_decode_any(void *m, struct kafka_reader *r, int16_t v, struct kafka_arena *a)" % name,
            "{",
            "    return %s_decode(m, r, v, a);" % name,
            "}",
            "static int %s_encode_any(const void *m, struct kafka_writer *w, int16_t v)" % name,
            "{",
            "    return %s_encode(m, w, v);" % name,
            "}",
            "static size_t %s_size_any(const void *m, int16_t v) { return %s_size(m, v); }" % (name, name),
            ""]


def emit_api_table(messages):
    files = []
    umbrella = [GEN_BANNER.rstrip("\n"), "#ifndef CAIRN_PROTOCOL_GEN_ALL_MESSAGES_H",
                "#define CAIRN_PROTOCOL_GEN_ALL_MESSAGES_H", ""]
    for m in messages:
        umbrella.append('#include "protocol/generated/%s.h"' % m.cname)
    umbrella += ["", "#endif", ""]
    files.append(("all_messages.h", "\n".join(umbrella)))

    h = [GEN_BANNER.rstrip("\n"), "#ifndef CAIRN_PROTOCOL_GEN_API_TABLE_H", "#define CAIRN_PROTOCOL_GEN_API_TABLE_H",
         "", "#include <stdbool.h>", "#include <stddef.h>", "#include <stdint.h>", "",
         '#include "protocol/wire.h"', "", API_DESC, "#endif", ""]
    files.append(("api_table.h", "\n".join(h)))

    requests = {m.api_key: m for m in messages if m.kind == "request"}
    responses = {m.api_key: m for m in messages if m.kind == "response"}
    # Only KRaft records: remote-log-metadata schemas are also typed "metadata"
    # but number their own record space.
    records = sorted((m for m in messages if m.kind == "metadata" and m.source.startswith("metadata/")),
                     key=lambda m: m.api_key)
    keys = sorted(requests)
    for k in keys:
        if k not in responses:
            raise EmitError("API %d has a request schema but no response schema" % k)

    c = [GEN_BANNER.rstrip("\n"), '#include "protocol/generated/api_table.h"',
         '#include "protocol/generated/all_messages.h"', ""]
    for k in keys:
        generic_wrappers(requests[k].cname, c)
        generic_wrappers(responses[k].cname, c)
    for m in records:
        generic_wrappers(m.cname, c)

    c.append("static const struct kafka_api_desc api_table[] = {")
    for k in keys:
        rq, rs = requests[k], responses[k]
        name = rq.name[:-len("Request")] if rq.name.endswith("Request") else rq.name
        c += ["    {",
              "        .api_key = %d," % k,
              "        .name = %s," % c_string_literal(name),
              "        .min_version = %d," % rq.valid.lo,
              "        .max_version = %d," % rq.valid.hi,
              "        .flexible_min = %d," % rq.flexible_min(),
              "        .latest_unstable = %s," % ("true" if (rq.unstable or rs.unstable) else "false"),
              "        .listeners = %s," % c_string_literal(",".join(rq.listeners)),
              "        .request_size_of = sizeof(struct %s)," % rq.cname,
              "        .response_size_of = sizeof(struct %s)," % rs.cname]
        for role, msg in (("request", rq), ("response", rs)):
            for fn in ("init", "decode", "encode", "size"):
                c.append("        .%s_%s = %s_%s_any," % (role, fn, msg.cname, fn))
        c.append("    },")
    c += ["};", ""]

    c.append("static const struct kafka_record_desc record_table[] = {")
    for m in records:
        c += ["    {",
              "        .record_type = %d," % m.api_key,
              "        .name = %s," % c_string_literal(m.name),
              "        .min_version = %d," % m.valid.lo,
              "        .max_version = %d," % m.valid.hi,
              "        .flexible_min = %d," % m.flexible_min(),
              "        .size_of = sizeof(struct %s)," % m.cname]
        for fn in ("init", "decode", "encode", "size"):
            c.append("        .%s = %s_%s_any," % (fn, m.cname, fn))
        c.append("    },")
    c += ["};", ""]

    c += ["#define API_TABLE_LEN ((int)(sizeof(api_table) / sizeof(api_table[0])))",
          "#define RECORD_TABLE_LEN ((int)(sizeof(record_table) / sizeof(record_table[0])))",
          "",
          "const struct kafka_api_desc *kafka_api_lookup(int16_t api_key)",
          "{",
          "    /* The table is sorted by key; keys are dense today but need not be. */",
          "    int lo = 0, hi = API_TABLE_LEN - 1;",
          "    while (lo <= hi) {",
          "        int mid = (lo + hi) / 2;",
          "        if (api_table[mid].api_key == api_key)",
          "            return &api_table[mid];",
          "        if (api_table[mid].api_key < api_key)",
          "            lo = mid + 1;",
          "        else",
          "            hi = mid - 1;",
          "    }",
          "    return NULL;",
          "}",
          "",
          "int kafka_api_count(void) { return API_TABLE_LEN; }",
          "",
          "const struct kafka_api_desc *kafka_api_at(int index)",
          "{",
          "    return index >= 0 && index < API_TABLE_LEN ? &api_table[index] : NULL;",
          "}",
          "",
          "int16_t kafka_request_header_version(int16_t api_key, int16_t api_version)",
          "{",
          "    const struct kafka_api_desc *d = kafka_api_lookup(api_key);",
          "    if (!d)",
          "        return -1;",
          "    if (api_key == 7 && api_version == 0)",
          "        return 0; /* ControlledShutdown v0 predates the client id */",
          "    return d->flexible_min >= 0 && api_version >= d->flexible_min ? 2 : 1;",
          "}",
          "",
          "int16_t kafka_response_header_version(int16_t api_key, int16_t api_version)",
          "{",
          "    const struct kafka_api_desc *d = kafka_api_lookup(api_key);",
          "    if (!d)",
          "        return -1;",
          "    if (api_key == 18)",
          "        return 0; /* clients parse ApiVersions before knowing what the broker supports */",
          "    return d->flexible_min >= 0 && api_version >= d->flexible_min ? 1 : 0;",
          "}",
          "",
          "const struct kafka_record_desc *kafka_metadata_record_lookup(int16_t record_type)",
          "{",
          "    for (int i = 0; i < RECORD_TABLE_LEN; i++)",
          "        if (record_table[i].record_type == record_type)",
          "            return &record_table[i];",
          "    return NULL;",
          "}",
          "",
          "int kafka_metadata_record_count(void) { return RECORD_TABLE_LEN; }",
          "",
          "const struct kafka_record_desc *kafka_metadata_record_at(int index)",
          "{",
          "    return index >= 0 && index < RECORD_TABLE_LEN ? &record_table[index] : NULL;",
          "}",
          ""]
    files.append(("api_table.c", "\n".join(c)))
    return files


def emit_errors(tsv_path):
    rows = []
    with open(tsv_path, encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f, delimiter="\t")
        for row in reader:
            code = int(row["code"])
            name = row["name"].strip()
            retriable = row["retriable"].strip().lower() == "true"
            rows.append((code, name, retriable))
    rows.sort()
    h = ["/* Generated from the Kafka protocol error table. Do not edit. */",
         "#ifndef CAIRN_PROTOCOL_ERRORS_H",
         "#define CAIRN_PROTOCOL_ERRORS_H",
         "#include <stdbool.h>",
         "#include <stdint.h>",
         "",
         "enum kafka_error {"]
    for code, name, _ in rows:
        h.append("    KAFKA_ERR_%s = %d," % (name, code))
    h += ["};",
          "",
          '/* The protocol name of an error code ("UNKNOWN_TOPIC_OR_PARTITION"); "UNKNOWN_ERROR_CODE" if unknown. */',
          "const char *kafka_error_name(int16_t code);",
          "/* Whether clients treat the error as retriable. */",
          "bool kafka_error_retriable(int16_t code);",
          "",
          "#endif",
          ""]
    c = [GEN_BANNER.rstrip("\n"), '#include "protocol/generated/errors.h"', "",
         "const char *kafka_error_name(int16_t code)", "{", "    switch (code) {"]
    for code, name, _ in rows:
        c.append('    case %d: return "%s";' % (code, name))
    c += ["    default: return \"UNKNOWN_ERROR_CODE\";", "    }", "}", "",
          "bool kafka_error_retriable(int16_t code)", "{", "    switch (code) {"]
    for code, name, retr in rows:
        if retr:
            c.append("    case %d:" % code)
    c += ["        return true;", "    default:", "        return false;", "    }", "}", ""]
    return [("errors.h", "\n".join(h)), ("errors.c", "\n".join(c))]
