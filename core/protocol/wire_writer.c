/* The writer half of the wire primitives (wire.h): a growing buffer that
 * encodes Kafka's types, with record sets spliced in from files until
 * kafka_writer_flatten reads them. */
#include "protocol/wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
