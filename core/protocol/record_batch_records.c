/* Record batch v2: varints, records of uncompressed batches, and the batch
 * builder. Every length read from the wire is checked against the bytes of
 * the enclosing record before use. */
#include "protocol/record_batch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t record_batch_read_varint(const uint8_t *p, const uint8_t *end, int32_t *out)
{
    uint32_t raw = 0;
    for (size_t i = 0; i < 5; i++) {
        if (p + i >= end)
            return 0;
        uint8_t b = p[i];
        /* The fifth byte may only carry the top four bits. */
        if (i == 4 && (b & 0xf0))
            return 0;
        raw |= (uint32_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *out = (int32_t)((raw >> 1) ^ (~(raw & 1) + 1));
            return i + 1;
        }
    }
    return 0;
}

size_t record_batch_read_varlong(const uint8_t *p, const uint8_t *end, int64_t *out)
{
    uint64_t raw = 0;
    for (size_t i = 0; i < 10; i++) {
        if (p + i >= end)
            return 0;
        uint8_t b = p[i];
        if (i == 9 && (b & 0xfe))
            return 0;
        raw |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *out = (int64_t)((raw >> 1) ^ (~(raw & 1) + 1));
            return i + 1;
        }
    }
    return 0;
}

size_t record_batch_write_varlong(uint8_t *out, int64_t value)
{
    uint64_t raw = ((uint64_t)value << 1) ^ (uint64_t)(value >> 63);
    size_t n = 0;
    while (raw >= 0x80) {
        out[n++] = (uint8_t)(raw | 0x80);
        raw >>= 7;
    }
    out[n++] = (uint8_t)raw;
    return n;
}

/* Record lengths, deltas and key/value lengths of typical records fit in one
 * or two bytes: decode those inline and leave the rest to the general loop.
 * Same results as the general functions for every input. */
static inline size_t rb_varint(const uint8_t *p, const uint8_t *end, int32_t *out)
{
    if (end - p >= 2) {
        uint32_t b0 = p[0];
        if (!(b0 & 0x80)) {
            *out = (int32_t)((b0 >> 1) ^ (~(b0 & 1) + 1));
            return 1;
        }
        uint32_t b1 = p[1];
        if (!(b1 & 0x80)) {
            uint32_t raw = (b0 & 0x7f) | b1 << 7;
            *out = (int32_t)((raw >> 1) ^ (~(raw & 1) + 1));
            return 2;
        }
    }
    return record_batch_read_varint(p, end, out);
}

static inline size_t rb_varlong(const uint8_t *p, const uint8_t *end, int64_t *out)
{
    if (end - p >= 2) {
        uint64_t b0 = p[0];
        if (!(b0 & 0x80)) {
            *out = (int64_t)((b0 >> 1) ^ (~(b0 & 1) + 1));
            return 1;
        }
        uint64_t b1 = p[1];
        if (!(b1 & 0x80)) {
            uint64_t raw = (b0 & 0x7f) | b1 << 7;
            *out = (int64_t)((raw >> 1) ^ (~(raw & 1) + 1));
            return 2;
        }
    }
    return record_batch_read_varlong(p, end, out);
}

int record_batch_records_begin(struct record_batch_record_iter *it, const uint8_t *batch, size_t len)
{
    struct record_batch_header h;
    it->err[0] = '\0';
    if (record_batch_parse_header(batch, len, &h) != 0) {
        snprintf(it->err, sizeof it->err, "batch shorter than its header");
        return -1;
    }
    if (record_batch_compression(&h) != RECORD_BATCH_COMPRESSION_NONE) {
        snprintf(it->err, sizeof it->err, "batch is compressed (codec %d)", record_batch_compression(&h));
        return -1;
    }
    it->pos = batch + RECORD_BATCH_HEADER_SIZE;
    it->end = batch + len;
    it->base_offset = h.base_offset;
    it->base_timestamp = h.base_timestamp;
    it->max_timestamp = h.max_timestamp;
    it->log_append_time = record_batch_is_log_append_time(&h);
    it->remaining = h.record_count < 0 ? 0 : h.record_count;
    return 0;
}

static int rb_iter_fail(struct record_batch_record_iter *it, const char *what)
{
    snprintf(it->err, sizeof it->err, "%s", what);
    return -1;
}

/* Read a varint length (-1 = null) and that many bytes. */
static int rb_read_bytes(const uint8_t **pp, const uint8_t *end, const uint8_t **data, int32_t *len, bool nullable)
{
    size_t n = rb_varint(*pp, end, len);
    if (n == 0)
        return -1;
    *pp += n;
    if (*len < 0) {
        if (*len != -1 || !nullable)
            return -1;
        *data = NULL;
        return 0;
    }
    if ((size_t)(end - *pp) < (size_t)*len)
        return -1;
    *data = *pp;
    *pp += *len;
    return 0;
}

static int rb_skip_headers(const uint8_t **pp, const uint8_t *end, int32_t count)
{
    for (int32_t i = 0; i < count; i++) {
        const uint8_t *data;
        int32_t len;
        if (rb_read_bytes(pp, end, &data, &len, false) != 0 || rb_read_bytes(pp, end, &data, &len, true) != 0)
            return -1;
    }
    return 0;
}

int record_batch_records_next(struct record_batch_record_iter *it, struct record_batch_record *out)
{
    if (it->remaining == 0) {
        if (it->pos != it->end)
            return rb_iter_fail(it, "extra bytes after the last record");
        return 0;
    }
    if (it->pos == it->end)
        return rb_iter_fail(it, "fewer records than the record count");
    int32_t length;
    size_t n = rb_varint(it->pos, it->end, &length);
    if (n == 0)
        return rb_iter_fail(it, "bad record length varint");
    const uint8_t *p = it->pos + n;
    if (length < 0 || (size_t)(it->end - p) < (size_t)length)
        return rb_iter_fail(it, "record length out of bounds");
    const uint8_t *rec_end = p + length;
    if (p >= rec_end)
        return rb_iter_fail(it, "empty record");
    out->attributes = (int8_t)*p++;
    int64_t ts_delta;
    if ((n = rb_varlong(p, rec_end, &ts_delta)) == 0)
        return rb_iter_fail(it, "bad timestamp delta");
    p += n;
    if ((n = rb_varint(p, rec_end, &out->offset_delta)) == 0)
        return rb_iter_fail(it, "bad offset delta");
    p += n;
    if (rb_read_bytes(&p, rec_end, &out->key, &out->key_len, true) != 0)
        return rb_iter_fail(it, "bad key length");
    if (rb_read_bytes(&p, rec_end, &out->value, &out->value_len, true) != 0)
        return rb_iter_fail(it, "bad value length");
    if ((n = rb_varint(p, rec_end, &out->header_count)) == 0 || out->header_count < 0)
        return rb_iter_fail(it, "bad header count");
    p += n;
    out->headers = p;
    if (rb_skip_headers(&p, rec_end, out->header_count) != 0)
        return rb_iter_fail(it, "bad record header");
    out->headers_len = (size_t)(p - out->headers);
    if (p != rec_end)
        return rb_iter_fail(it, "record length disagrees with its contents");
    out->offset = it->base_offset + out->offset_delta;
    /* Unsigned add: a hostile delta must not be undefined behaviour. */
    out->timestamp = it->log_append_time ? it->max_timestamp
                                         : (int64_t)((uint64_t)it->base_timestamp + (uint64_t)ts_delta);
    it->pos = rec_end;
    it->remaining--;
    return 1;
}

void record_batch_headers_begin(struct record_batch_headers_iter *it, const struct record_batch_record *rec)
{
    it->pos = rec->headers;
    it->end = rec->headers + rec->headers_len;
    it->remaining = rec->header_count;
}

int record_batch_headers_next(struct record_batch_headers_iter *it, struct record_batch_header_field *out)
{
    if (it->remaining <= 0)
        return 0;
    if (rb_read_bytes(&it->pos, it->end, &out->key, &out->key_len, false) != 0 ||
        rb_read_bytes(&it->pos, it->end, &out->value, &out->value_len, true) != 0)
        return -1;
    it->remaining--;
    return 1;
}

/* ---- builder ---- */

void record_batch_builder_init(struct record_batch_builder *b, int64_t base_timestamp)
{
    memset(b, 0, sizeof *b);
    b->base_timestamp = base_timestamp;
    b->max_timestamp = base_timestamp;
    b->producer_id = -1;
    b->producer_epoch = -1;
    b->base_sequence = -1;
}

static int rb_builder_reserve(struct record_batch_builder *b, size_t extra)
{
    if (b->failed)
        return -1;
    size_t need = b->len + extra;
    if (b->len == 0)
        need += RECORD_BATCH_HEADER_SIZE;
    if (need > INT32_MAX) {
        b->failed = true;
        return -1;
    }
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    uint8_t *grown = realloc(b->buf, cap);
    if (!grown) {
        b->failed = true;
        return -1;
    }
    b->buf = grown;
    b->cap = cap;
    if (b->len == 0)
        b->len = RECORD_BATCH_HEADER_SIZE;
    return 0;
}

static void rb_put_bytes(uint8_t **pp, const void *data, int32_t len)
{
    *pp += record_batch_write_varlong(*pp, len);
    if (len > 0) {
        memcpy(*pp, data, (size_t)len);
        *pp += len;
    }
}

int record_batch_builder_add(struct record_batch_builder *b, int64_t timestamp, const void *key, int32_t key_len,
                             const void *value, int32_t value_len, const struct record_batch_header_field *headers,
                             int32_t header_count)
{
    if (key_len < -1 || value_len < -1 || header_count < 0)
        return -1;
    /* Upper bound of the encoded body: varints are at most 10 bytes here. */
    size_t body_max = 1 + 10 + 10 + 10 + (key_len > 0 ? (size_t)key_len : 0) + 10 +
                      (value_len > 0 ? (size_t)value_len : 0) + 10;
    for (int32_t i = 0; i < header_count; i++) {
        if (headers[i].key_len < 0 || headers[i].value_len < -1)
            return -1;
        body_max += 20 + (size_t)headers[i].key_len + (headers[i].value_len > 0 ? (size_t)headers[i].value_len : 0);
    }
    if (rb_builder_reserve(b, body_max + 10) != 0)
        return -1;
    /* Encode the body after a gap for the length, then slide it into place. */
    uint8_t *start = b->buf + b->len + 10;
    uint8_t *p = start;
    *p++ = 0; /* record attributes, unused */
    p += record_batch_write_varlong(p, timestamp - b->base_timestamp);
    p += record_batch_write_varlong(p, b->count);
    rb_put_bytes(&p, key, key_len);
    rb_put_bytes(&p, value, value_len);
    p += record_batch_write_varlong(p, header_count);
    for (int32_t i = 0; i < header_count; i++) {
        rb_put_bytes(&p, headers[i].key, headers[i].key_len);
        rb_put_bytes(&p, headers[i].value, headers[i].value_len);
    }
    size_t body_len = (size_t)(p - start);
    size_t n = record_batch_write_varlong(b->buf + b->len, (int64_t)body_len);
    memmove(b->buf + b->len + n, start, body_len);
    b->len += n + body_len;
    b->count++;
    if (timestamp > b->max_timestamp)
        b->max_timestamp = timestamp;
    return 0;
}

static void rb_builder_put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static void rb_builder_put64(uint8_t *p, uint64_t v)
{
    rb_builder_put32(p, (uint32_t)(v >> 32));
    rb_builder_put32(p + 4, (uint32_t)v);
}

int record_batch_builder_finish(struct record_batch_builder *b, uint8_t **out, size_t *out_len)
{
    if (b->failed || b->count == 0) {
        record_batch_builder_free(b);
        return -1;
    }
    uint8_t *h = b->buf;
    rb_builder_put64(h, 0);
    rb_builder_put32(h + 8, (uint32_t)(b->len - RECORD_BATCH_LOG_OVERHEAD));
    rb_builder_put32(h + 12, (uint32_t)-1);
    h[16] = RECORD_BATCH_MAGIC;
    h[21] = (uint8_t)((uint16_t)b->attributes >> 8);
    h[22] = (uint8_t)b->attributes;
    rb_builder_put32(h + 23, (uint32_t)(b->count - 1));
    rb_builder_put64(h + 27, (uint64_t)b->base_timestamp);
    rb_builder_put64(h + 35, (uint64_t)b->max_timestamp);
    rb_builder_put64(h + 43, (uint64_t)b->producer_id);
    h[51] = (uint8_t)((uint16_t)b->producer_epoch >> 8);
    h[52] = (uint8_t)b->producer_epoch;
    rb_builder_put32(h + 53, (uint32_t)b->base_sequence);
    rb_builder_put32(h + 57, (uint32_t)b->count);
    record_batch_update_crc(h, b->len);
    *out = b->buf;
    *out_len = b->len;
    memset(b, 0, sizeof *b);
    return 0;
}

void record_batch_builder_free(struct record_batch_builder *b)
{
    free(b->buf);
    memset(b, 0, sizeof *b);
}
