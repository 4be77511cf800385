#include "protocol/wire.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------- reader */

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

/* ----------------------------------------------------------------- arena */

#define ARENA_MIN_BLOCK 4096u
#define ARENA_MAX_BLOCK 65536u

struct kafka_arena_block {
    struct kafka_arena_block *next;
    size_t size;
    size_t used;
    /* Keeps data 16-byte aligned regardless of the header fields above. */
    _Alignas(16) unsigned char data[];
};

void kafka_arena_init(struct kafka_arena *a)
{
    a->head = NULL;
    a->used_total = 0;
    a->block_total = 0;
}

static struct kafka_arena_block *arena_new_block(struct kafka_arena *a, size_t size)
{
    if (size > SIZE_MAX - sizeof(struct kafka_arena_block))
        return NULL;
    struct kafka_arena_block *b = malloc(sizeof(*b) + size);
    if (!b)
        return NULL;
    b->size = size;
    b->used = 0;
    a->block_total += sizeof(*b) + size;
    return b;
}

void *kafka_arena_alloc(struct kafka_arena *a, size_t size)
{
    if (size > SIZE_MAX - 32)
        return NULL;
    size_t need = (size + 15) & ~(size_t)15;
    if (need == 0)
        need = 16;
    struct kafka_arena_block *b = a->head;
    if (!b || b->size - b->used < need) {
        /* Blocks grow with use. A request of a quarter block or more gets a
         * block of its own behind the head, which keeps its room; a smaller
         * one starts a new head, so a retired head wastes under a quarter of
         * itself. Block bytes thus stay under 2 * used + one block. */
        size_t block = a->used_total < ARENA_MAX_BLOCK ? ARENA_MIN_BLOCK : ARENA_MAX_BLOCK;
        if (need >= block / 4) {
            struct kafka_arena_block *own = arena_new_block(a, need);
            if (!own)
                return NULL;
            if (b) {
                own->next = b->next;
                b->next = own;
            } else {
                own->next = NULL;
                a->head = own;
            }
            b = own;
        } else {
            struct kafka_arena_block *nb = arena_new_block(a, block);
            if (!nb)
                return NULL;
            nb->next = b;
            a->head = nb;
            b = nb;
        }
    }
    void *p = b->data + b->used;
    b->used += need;
    a->used_total += need;
    memset(p, 0, size);
    return p;
}

size_t kafka_arena_high_water(const struct kafka_arena *a)
{
    return a->block_total;
}

struct kafka_str kafka_arena_strdup(struct kafka_arena *a, const char *s)
{
    struct kafka_str out = {NULL, -1};
    if (!s)
        return out;
    size_t n = strlen(s);
    if (n > INT32_MAX - 1)
        return out;
    char *p = kafka_arena_alloc(a, n + 1);
    if (!p)
        return out;
    memcpy(p, s, n);
    out.data = p;
    out.len = (int32_t)n;
    return out;
}

void kafka_arena_free(struct kafka_arena *a)
{
    struct kafka_arena_block *b = a->head;
    while (b) {
        struct kafka_arena_block *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
    a->used_total = 0;
    a->block_total = 0;
}

/* ---------------------------------------------------------------- writer */

int kafka_writer_init(struct kafka_writer *w, size_t initial_cap)
{
    memset(w, 0, sizeof(*w));
    if (initial_cap == 0)
        initial_cap = 64;
    w->buf = malloc(initial_cap);
    if (!w->buf) {
        w->failed = 1;
        return -1;
    }
    w->cap = initial_cap;
    return 0;
}

void kafka_writer_free(struct kafka_writer *w)
{
    for (size_t i = 0; i < w->splice_count; i++)
        if (w->splices[i].fd >= 0)
            close(w->splices[i].fd);
    free(w->splices);
    free(w->buf);
    memset(w, 0, sizeof(*w));
}

/* Makes room for n more bytes; returns false (and fails) if impossible. */
static bool writer_grow(struct kafka_writer *w, size_t n)
{
    if (w->failed)
        return false;
    if (n <= w->cap - w->len)
        return true;
    if (n > SIZE_MAX / 2 - w->len) {
        w->failed = 1;
        return false;
    }
    size_t cap = w->cap ? w->cap : 64;
    while (cap - w->len < n)
        cap *= 2;
    uint8_t *nb = realloc(w->buf, cap);
    if (!nb) {
        w->failed = 1;
        return false;
    }
    w->buf = nb;
    w->cap = cap;
    return true;
}

void kafka_write_raw(struct kafka_writer *w, const void *data, size_t n)
{
    if (n == 0 || !writer_grow(w, n))
        return;
    memcpy(w->buf + w->len, data, n);
    w->len += n;
}

size_t kafka_writer_reserve(struct kafka_writer *w, size_t n)
{
    size_t at = w->len;
    if (!writer_grow(w, n))
        return at;
    memset(w->buf + w->len, 0, n);
    w->len += n;
    return at;
}

static void put_be(uint8_t *p, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

void kafka_writer_patch_int32(struct kafka_writer *w, size_t offset, int32_t v)
{
    if (w->failed || offset > w->len || w->len - offset < 4)
        return;
    put_be(w->buf + offset, (uint32_t)v, 4);
}

int64_t kafka_writer_total_len(const struct kafka_writer *w)
{
    int64_t total = (int64_t)w->len;
    for (size_t i = 0; i < w->splice_count; i++)
        total += w->splices[i].len;
    return total;
}

int kafka_writer_flatten(struct kafka_writer *w)
{
    if (w->splice_count == 0)
        return w->failed ? -1 : 0;
    int64_t total = kafka_writer_total_len(w);
    if (w->failed || total < 0 || (uint64_t)total > SIZE_MAX / 2)
        return -1;
    uint8_t *out = malloc((size_t)total ? (size_t)total : 1);
    if (!out)
        return -1;
    size_t src = 0, dst = 0;
    int rc = 0;
    for (size_t i = 0; i < w->splice_count; i++) {
        struct kafka_splice *s = &w->splices[i];
        memcpy(out + dst, w->buf + src, s->at - src);
        dst += s->at - src;
        src = s->at;
        int32_t done = 0;
        while (done < s->len) {
            ssize_t got = pread(s->fd, out + dst + done, (size_t)(s->len - done), s->pos + done);
            if (got < 0 && errno == EINTR)
                continue;
            if (got <= 0) {
                rc = -1;
                break;
            }
            done += (int32_t)got;
        }
        dst += (size_t)s->len;
        if (rc != 0)
            break;
    }
    if (rc != 0) {
        free(out);
        return -1;
    }
    memcpy(out + dst, w->buf + src, w->len - src);
    dst += w->len - src;
    for (size_t i = 0; i < w->splice_count; i++)
        if (w->splices[i].fd >= 0)
            close(w->splices[i].fd);
    w->splice_count = 0;
    free(w->buf);
    w->buf = out;
    w->len = dst;
    w->cap = (size_t)total ? (size_t)total : 1;
    return 0;
}

static void write_be(struct kafka_writer *w, uint64_t v, size_t n)
{
    if (!writer_grow(w, n))
        return;
    put_be(w->buf + w->len, v, n);
    w->len += n;
}

void kafka_write_int8(struct kafka_writer *w, int8_t v)
{
    write_be(w, (uint8_t)v, 1);
}
void kafka_write_int16(struct kafka_writer *w, int16_t v)
{
    write_be(w, (uint16_t)v, 2);
}
void kafka_write_int32(struct kafka_writer *w, int32_t v)
{
    write_be(w, (uint32_t)v, 4);
}
void kafka_write_int64(struct kafka_writer *w, int64_t v)
{
    write_be(w, (uint64_t)v, 8);
}
void kafka_write_uint16(struct kafka_writer *w, uint16_t v)
{
    write_be(w, v, 2);
}
void kafka_write_uint32(struct kafka_writer *w, uint32_t v)
{
    write_be(w, v, 4);
}
void kafka_write_bool(struct kafka_writer *w, bool v)
{
    write_be(w, v ? 1 : 0, 1);
}

void kafka_write_float64(struct kafka_writer *w, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof(bits));
    write_be(w, bits, 8);
}

void kafka_write_uuid(struct kafka_writer *w, struct kafka_uuid v)
{
    kafka_write_raw(w, v.bytes, 16);
}

void kafka_write_uvarlong(struct kafka_writer *w, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;
    while (v >= 0x80) {
        tmp[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    tmp[n++] = (uint8_t)v;
    kafka_write_raw(w, tmp, n);
}

void kafka_write_uvarint(struct kafka_writer *w, uint32_t v)
{
    kafka_write_uvarlong(w, v);
}

void kafka_write_varint(struct kafka_writer *w, int32_t v)
{
    kafka_write_uvarlong(w, ((uint32_t)v << 1) ^ (uint32_t)(v >> 31));
}

void kafka_write_varlong(struct kafka_writer *w, int64_t v)
{
    kafka_write_uvarlong(w, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

size_t kafka_uvarlong_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

size_t kafka_uvarint_size(uint32_t v)
{
    return kafka_uvarlong_size(v);
}
size_t kafka_varint_size(int32_t v)
{
    return kafka_uvarlong_size(((uint32_t)v << 1) ^ (uint32_t)(v >> 31));
}
size_t kafka_varlong_size(int64_t v)
{
    return kafka_uvarlong_size(((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

void kafka_write_string(struct kafka_writer *w, struct kafka_str s)
{
    if (s.len < 0) {
        kafka_write_int16(w, -1);
        return;
    }
    if (s.len > INT16_MAX) {
        w->failed = 1;
        return;
    }
    kafka_write_int16(w, (int16_t)s.len);
    kafka_write_raw(w, s.data, (size_t)s.len);
}

void kafka_write_compact_string(struct kafka_writer *w, struct kafka_str s)
{
    if (s.len < 0) {
        kafka_write_uvarint(w, 0);
        return;
    }
    kafka_write_uvarint(w, (uint32_t)s.len + 1);
    kafka_write_raw(w, s.data, (size_t)s.len);
}

void kafka_write_bytes(struct kafka_writer *w, struct kafka_bytes b)
{
    kafka_write_int32(w, b.len < 0 ? -1 : b.len);
    if (b.len > 0)
        kafka_write_raw(w, b.data, (size_t)b.len);
}

void kafka_write_compact_bytes(struct kafka_writer *w, struct kafka_bytes b)
{
    kafka_write_uvarint(w, b.len < 0 ? 0 : (uint32_t)b.len + 1);
    if (b.len > 0)
        kafka_write_raw(w, b.data, (size_t)b.len);
}

static void write_records_body(struct kafka_writer *w, const struct kafka_records *rec)
{
    if (rec->len <= 0)
        return;
    if (rec->file_fd < 0) {
        kafka_write_raw(w, rec->data, (size_t)rec->len);
        return;
    }
    if (w->failed)
        return;
    if (w->splice_count == w->splice_cap) {
        size_t cap = w->splice_cap ? w->splice_cap * 2 : 4;
        struct kafka_splice *ns = realloc(w->splices, cap * sizeof(*ns));
        if (!ns) {
            w->failed = 1;
            return;
        }
        w->splices = ns;
        w->splice_cap = cap;
    }
    struct kafka_splice *s = &w->splices[w->splice_count++];
    s->at = w->len;
    s->fd = rec->file_fd;
    s->pos = rec->file_pos;
    s->len = rec->len;
}

void kafka_write_records(struct kafka_writer *w, const struct kafka_records *rec)
{
    kafka_write_int32(w, rec->len < 0 ? -1 : rec->len);
    write_records_body(w, rec);
}

void kafka_write_compact_records(struct kafka_writer *w, const struct kafka_records *rec)
{
    kafka_write_uvarint(w, rec->len < 0 ? 0 : (uint32_t)rec->len + 1);
    write_records_body(w, rec);
}

void kafka_write_array_len(struct kafka_writer *w, int32_t count)
{
    kafka_write_int32(w, count < 0 ? -1 : count);
}

void kafka_write_compact_array_len(struct kafka_writer *w, int32_t count)
{
    kafka_write_uvarint(w, count < 0 ? 0 : (uint32_t)count + 1);
}

/* --------------------------------------------------------------- helpers */

struct kafka_records kafka_records_from_memory(const void *data, int32_t len)
{
    struct kafka_records r = {data, len < 0 ? -1 : len, -1, 0};
    return r;
}

struct kafka_records kafka_records_from_file(int fd, int64_t pos, int32_t len)
{
    struct kafka_records r = {NULL, len < 0 ? -1 : len, fd, pos};
    return r;
}

struct kafka_str kafka_str_from_cstr(const char *s)
{
    struct kafka_str out = {s, -1};
    if (s) {
        size_t n = strlen(s);
        out.len = n > INT32_MAX ? INT32_MAX : (int32_t)n;
    }
    return out;
}

bool kafka_str_eq_cstr(struct kafka_str s, const char *cstr)
{
    if (s.len < 0 || !cstr)
        return s.len < 0 && !cstr;
    size_t n = strlen(cstr);
    return n == (size_t)s.len && (n == 0 || memcmp(s.data, cstr, n) == 0);
}

char *kafka_str_to_cstr(struct kafka_str s, char *buf, size_t buflen)
{
    if (buflen == 0)
        return buf;
    size_t n = s.len > 0 ? (size_t)s.len : 0;
    if (n > buflen - 1)
        n = buflen - 1;
    if (n)
        memcpy(buf, s.data, n);
    buf[n] = '\0';
    return buf;
}
