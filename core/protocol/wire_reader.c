/* The reader half of the wire primitives (wire.h): Kafka's integers,
 * varints, strings, bytes, records and array lengths out of untrusted bytes,
 * every read bounds-checked, the first failure kept with its field path. */
#include "protocol/wire.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void kafka_reader_init(struct kafka_reader *r, const void *data, size_t len)
{
    r->data = data;
    r->len = data ? len : 0;
    r->pos = 0;
    r->reserved = 0;
    r->failed = 0;
    r->error[0] = '\0';
}

size_t kafka_reader_remaining(const struct kafka_reader *r)
{
    return r->len - r->pos;
}

void kafka_reader_fail(struct kafka_reader *r, const char *fmt, ...)
{
    if (r->failed)
        return;
    r->failed = 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->error, sizeof(r->error), fmt, ap);
    va_end(ap);
}

/* Writes a + sep + b into dst, truncating; never overflows. */
static void join_error(char *dst, size_t cap, const char *a, const char *sep, const char *b)
{
    size_t n = 0;
    const char *parts[3] = {a, sep, b};
    for (int i = 0; i < 3; i++)
        for (const char *p = parts[i]; *p && n + 1 < cap; p++)
            dst[n++] = *p;
    dst[n] = '\0';
}

int kafka_reader_field_error(struct kafka_reader *r, const char *field)
{
    char old[sizeof(r->error)];
    memcpy(old, r->error, sizeof(old));
    /* Fields are reported innermost first; failed == 2 marks an error that
     * already starts with a field path, so outer names join it with '.'. */
    if (r->failed == 2)
        join_error(r->error, sizeof(r->error), field, ".", old);
    else if (r->failed && old[0] != '\0')
        join_error(r->error, sizeof(r->error), field, ": ", old);
    else
        join_error(r->error, sizeof(r->error), field, ": ", "invalid");
    r->failed = 2;
    return -1;
}

int kafka_reader_adopt_error(struct kafka_reader *r, const struct kafka_reader *sub, const char *field)
{
    r->failed = sub->failed ? sub->failed : 1;
    memcpy(r->error, sub->error, sizeof(r->error));
    return kafka_reader_field_error(r, field);
}

/* Returns a pointer to n bytes and advances, or NULL (and fails). */
static const uint8_t *reader_take(struct kafka_reader *r, size_t n)
{
    if (r->failed)
        return NULL;
    if (n > r->len - r->pos) {
        kafka_reader_fail(r, "need %zu bytes at offset %zu, have %zu", n, r->pos, r->len - r->pos);
        return NULL;
    }
    const uint8_t *p = r->data + r->pos;
    r->pos += n;
    return p;
}

static uint64_t read_be(struct kafka_reader *r, size_t n)
{
    const uint8_t *p = reader_take(r, n);
    if (!p)
        return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

int8_t kafka_read_int8(struct kafka_reader *r)
{
    return (int8_t)(uint8_t)read_be(r, 1);
}
int16_t kafka_read_int16(struct kafka_reader *r)
{
    return (int16_t)(uint16_t)read_be(r, 2);
}
int32_t kafka_read_int32(struct kafka_reader *r)
{
    return (int32_t)(uint32_t)read_be(r, 4);
}
int64_t kafka_read_int64(struct kafka_reader *r)
{
    return (int64_t)read_be(r, 8);
}
uint16_t kafka_read_uint16(struct kafka_reader *r)
{
    return (uint16_t)read_be(r, 2);
}
uint32_t kafka_read_uint32(struct kafka_reader *r)
{
    return (uint32_t)read_be(r, 4);
}

double kafka_read_float64(struct kafka_reader *r)
{
    uint64_t bits = read_be(r, 8);
    double d;
    memcpy(&d, &bits, sizeof(d));
    return d;
}

bool kafka_read_bool(struct kafka_reader *r)
{
    return read_be(r, 1) != 0;
}

struct kafka_uuid kafka_read_uuid(struct kafka_reader *r)
{
    struct kafka_uuid u;
    const uint8_t *p = reader_take(r, 16);
    if (p)
        memcpy(u.bytes, p, 16);
    else
        memset(u.bytes, 0, 16);
    return u;
}

/* Unsigned LEB128 with at most max_bytes groups. */
static uint64_t read_uleb(struct kafka_reader *r, int max_bytes, const char *what)
{
    uint64_t v = 0;
    for (int i = 0; i < max_bytes; i++) {
        const uint8_t *p = reader_take(r, 1);
        if (!p)
            return 0;
        v |= (uint64_t)(*p & 0x7f) << (7 * i);
        if (!(*p & 0x80))
            return v;
    }
    kafka_reader_fail(r, "invalid %s at offset %zu: too long", what, r->pos);
    return 0;
}

uint32_t kafka_read_uvarint(struct kafka_reader *r)
{
    uint64_t v = read_uleb(r, 5, "varint");
    if (v > UINT32_MAX) {
        kafka_reader_fail(r, "invalid varint at offset %zu: overflow", r->pos);
        return 0;
    }
    return (uint32_t)v;
}

uint64_t kafka_read_uvarlong(struct kafka_reader *r)
{
    return read_uleb(r, 10, "varlong");
}

int32_t kafka_read_varint(struct kafka_reader *r)
{
    uint32_t u = kafka_read_uvarint(r);
    return (int32_t)((u >> 1) ^ (~(u & 1) + 1));
}

int64_t kafka_read_varlong(struct kafka_reader *r)
{
    uint64_t u = kafka_read_uvarlong(r);
    return (int64_t)((u >> 1) ^ (~(u & 1) + 1));
}

/* Reads a length from the wire: int16/int32 (-1 null) or compact uvarint
 * (0 null, else len+1). Returns -1 null, -2 error, else the length. */
static int64_t read_length(struct kafka_reader *r, int kind)
{
    int64_t n;
    if (kind == 2)
        n = kafka_read_int16(r);
    else if (kind == 4)
        n = kafka_read_int32(r);
    else
        n = (int64_t)kafka_read_uvarint(r) - 1;
    if (r->failed)
        return -2;
    if (n < -1) {
        kafka_reader_fail(r, "invalid length %lld at offset %zu", (long long)n, r->pos);
        return -2;
    }
    if (n > INT32_MAX - 1) {
        kafka_reader_fail(r, "invalid length %lld at offset %zu", (long long)n, r->pos);
        return -2;
    }
    return n;
}

static const uint8_t *read_sized(struct kafka_reader *r, int kind, bool nullable, int32_t *len_out, const char *what)
{
    *len_out = 0;
    int64_t n = read_length(r, kind);
    if (n == -2)
        return NULL;
    if (n == -1) {
        if (!nullable) {
            kafka_reader_fail(r, "null %s where not allowed", what);
            return NULL;
        }
        *len_out = -1;
        return NULL;
    }
    const uint8_t *p = reader_take(r, (size_t)n);
    if (!p)
        return NULL;
    *len_out = (int32_t)n;
    return p;
}

static struct kafka_str make_str(const uint8_t *p, int32_t len)
{
    struct kafka_str s = {len >= 0 && p ? (const char *)p : (len >= 0 ? "" : NULL), len};
    return s;
}

struct kafka_str kafka_read_string(struct kafka_reader *r)
{
    int32_t len;
    const uint8_t *p = read_sized(r, 2, false, &len, "string");
    return make_str(p, len);
}

struct kafka_str kafka_read_nullable_string(struct kafka_reader *r)
{
    int32_t len;
    const uint8_t *p = read_sized(r, 2, true, &len, "string");
    return make_str(p, len);
}

struct kafka_str kafka_read_compact_string(struct kafka_reader *r)
{
    int32_t len;
    const uint8_t *p = read_sized(r, 0, false, &len, "string");
    return make_str(p, len);
}

struct kafka_str kafka_read_compact_nullable_string(struct kafka_reader *r)
{
    int32_t len;
    const uint8_t *p = read_sized(r, 0, true, &len, "string");
    return make_str(p, len);
}

static struct kafka_bytes make_bytes(const uint8_t *p, int32_t len)
{
    static const uint8_t empty[1];
    struct kafka_bytes b = {len >= 0 ? (p ? p : empty) : NULL, len};
    return b;
}

struct kafka_bytes kafka_read_bytes(struct kafka_reader *r)
{
    int32_t len;
    const uint8_t *p = read_sized(r, 4, false, &len, "bytes");
    return make_bytes(p, len);
}

struct kafka_bytes kafka_read_nullable_bytes(struct kafka_reader *r)
{
    int32_t len;
    const uint8_t *p = read_sized(r, 4, true, &len, "bytes");
    return make_bytes(p, len);
}

struct kafka_bytes kafka_read_compact_bytes(struct kafka_reader *r)
{
    int32_t len;
    const uint8_t *p = read_sized(r, 0, false, &len, "bytes");
    return make_bytes(p, len);
}

struct kafka_bytes kafka_read_compact_nullable_bytes(struct kafka_reader *r)
{
    int32_t len;
    const uint8_t *p = read_sized(r, 0, true, &len, "bytes");
    return make_bytes(p, len);
}

struct kafka_records kafka_read_records(struct kafka_reader *r)
{
    struct kafka_bytes b = kafka_read_nullable_bytes(r);
    return kafka_records_from_memory(b.data, b.len);
}

struct kafka_records kafka_read_compact_records(struct kafka_reader *r)
{
    struct kafka_bytes b = kafka_read_compact_nullable_bytes(r);
    return kafka_records_from_memory(b.data, b.len);
}

static int32_t check_count(struct kafka_reader *r, int64_t n, size_t min_element_size)
{
    if (n == -2)
        return 0;
    if (n == -1)
        return -1;
    if (min_element_size == 0)
        min_element_size = 1;
    size_t left = kafka_reader_remaining(r);
    size_t avail = left > r->reserved ? left - r->reserved : 0;
    if ((uint64_t)n > avail / min_element_size) {
        kafka_reader_fail(r, "invalid array count %lld at offset %zu: only %zu bytes left", (long long)n, r->pos,
                          avail);
        return 0;
    }
    return (int32_t)n;
}

int32_t kafka_read_array_len(struct kafka_reader *r, size_t min_element_size)
{
    return check_count(r, read_length(r, 4), min_element_size);
}

int32_t kafka_read_compact_array_len(struct kafka_reader *r, size_t min_element_size)
{
    return check_count(r, read_length(r, 0), min_element_size);
}

void kafka_reader_skip(struct kafka_reader *r, size_t n)
{
    reader_take(r, n);
}

void kafka_reader_skip_tagged_fields(struct kafka_reader *r)
{
    uint32_t count = kafka_read_uvarint(r);
    for (uint32_t i = 0; i < count && !r->failed; i++) {
        kafka_read_uvarint(r); /* tag */
        uint32_t size = kafka_read_uvarint(r);
        reader_take(r, size);
    }
}
