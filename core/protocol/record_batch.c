/* Record batch v2: header decoding, validation, CRC, in-place mutation and
 * iteration over consecutive batches. Record-level code lives in
 * record_batch_records.c. */
#include "protocol/record_batch.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "protocol/generated/errors.h"
#include "util/crc32c.h"

static inline uint16_t rb_be16(const uint8_t *p)
{
    return (uint16_t)((uint16_t)p[0] << 8 | p[1]);
}
static inline uint32_t rb_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint64_t rb_be64(const uint8_t *p)
{
    return (uint64_t)rb_be32(p) << 32 | rb_be32(p + 4);
}
static inline void rb_put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}
static inline void rb_put64(uint8_t *p, uint64_t v)
{
    rb_put32(p, (uint32_t)(v >> 32));
    rb_put32(p + 4, (uint32_t)v);
}

int record_batch_parse_header(const uint8_t *buf, size_t len, struct record_batch_header *out)
{
    if (len < RECORD_BATCH_HEADER_SIZE)
        return -1;
    out->base_offset = (int64_t)rb_be64(buf);
    out->batch_length = (int32_t)rb_be32(buf + 8);
    out->partition_leader_epoch = (int32_t)rb_be32(buf + 12);
    out->magic = (int8_t)buf[16];
    out->crc = rb_be32(buf + 17);
    out->attributes = (int16_t)rb_be16(buf + 21);
    out->last_offset_delta = (int32_t)rb_be32(buf + 23);
    out->base_timestamp = (int64_t)rb_be64(buf + 27);
    out->max_timestamp = (int64_t)rb_be64(buf + 35);
    out->producer_id = (int64_t)rb_be64(buf + 43);
    out->producer_epoch = (int16_t)rb_be16(buf + 51);
    out->base_sequence = (int32_t)rb_be32(buf + 53);
    out->record_count = (int32_t)rb_be32(buf + 57);
    return 0;
}

uint32_t record_batch_compute_crc(const uint8_t *batch, size_t len)
{
    if (len < RECORD_BATCH_HEADER_SIZE)
        return 0;
    return crc32c(0, batch + RECORD_BATCH_OFFSET_ATTRIBUTES, len - RECORD_BATCH_OFFSET_ATTRIBUTES);
}

bool record_batch_crc_ok(const uint8_t *batch, size_t len)
{
    if (len < RECORD_BATCH_HEADER_SIZE)
        return false;
    int32_t batch_length = (int32_t)rb_be32(batch + RECORD_BATCH_OFFSET_BATCH_LENGTH);
    if (batch_length < RECORD_BATCH_HEADER_SIZE - RECORD_BATCH_LOG_OVERHEAD ||
        (size_t)batch_length + RECORD_BATCH_LOG_OVERHEAD != len)
        return false;
    return record_batch_compute_crc(batch, len) == rb_be32(batch + RECORD_BATCH_OFFSET_CRC);
}

static int16_t rb_fail(int16_t code, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int16_t rb_fail(int16_t code, char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

static int16_t rb_validate_records(const uint8_t *buf, size_t total, const struct record_batch_header *h, char *err,
                                   size_t errlen)
{
    struct record_batch_record_iter it;
    struct record_batch_record rec;
    if (record_batch_records_begin(&it, buf, total) != 0)
        return rb_fail(KAFKA_ERR_INVALID_RECORD, err, errlen, "%s", it.err);
    int32_t expected_delta = 0;
    int rc;
    while ((rc = record_batch_records_next(&it, &rec)) == 1) {
        if (rec.offset_delta != expected_delta)
            return rb_fail(KAFKA_ERR_INVALID_RECORD, err, errlen, "record %" PRId32 " has offset delta %" PRId32,
                           expected_delta, rec.offset_delta);
        expected_delta++;
    }
    if (rc < 0)
        return rb_fail(KAFKA_ERR_INVALID_RECORD, err, errlen, "record %" PRId32 ": %s", expected_delta, it.err);
    if (expected_delta != h->record_count)
        return rb_fail(KAFKA_ERR_INVALID_RECORD, err, errlen, "batch holds %" PRId32 " records but declares %" PRId32,
                       expected_delta, h->record_count);
    return KAFKA_ERR_NONE;
}

int16_t record_batch_validate(const uint8_t *buf, size_t len, int32_t max_batch_bytes, struct record_batch_header *out,
                              char *err, size_t errlen)
{
    struct record_batch_header h;
    if (len < RECORD_BATCH_LOG_OVERHEAD + 5)
        return rb_fail(KAFKA_ERR_CORRUPT_MESSAGE, err, errlen, "record batch truncated: %zu bytes", len);
    int32_t batch_length = (int32_t)rb_be32(buf + RECORD_BATCH_OFFSET_BATCH_LENGTH);
    int8_t magic = (int8_t)buf[RECORD_BATCH_OFFSET_MAGIC];
    /* Magic first: an old-format message set has a shorter header, so its
     * length checks below would give a misleading reason. */
    if (magic == 0 || magic == 1)
        return rb_fail(KAFKA_ERR_UNSUPPORTED_FOR_MESSAGE_FORMAT, err, errlen,
                       "message format v%d is not supported, use v2", magic);
    if (magic != RECORD_BATCH_MAGIC)
        return rb_fail(KAFKA_ERR_CORRUPT_MESSAGE, err, errlen, "invalid magic byte %d", magic);
    if (batch_length < RECORD_BATCH_HEADER_SIZE - RECORD_BATCH_LOG_OVERHEAD)
        return rb_fail(KAFKA_ERR_CORRUPT_MESSAGE, err, errlen, "batch length %" PRId32 " is smaller than the header",
                       batch_length);
    size_t total = (size_t)batch_length + RECORD_BATCH_LOG_OVERHEAD;
    if (max_batch_bytes >= 0 && total > (size_t)max_batch_bytes)
        return rb_fail(KAFKA_ERR_MESSAGE_TOO_LARGE, err, errlen, "batch of %zu bytes exceeds the limit of %" PRId32,
                       total, max_batch_bytes);
    if (total > len)
        return rb_fail(KAFKA_ERR_CORRUPT_MESSAGE, err, errlen, "batch length %zu exceeds the %zu bytes available",
                       total, len);
    record_batch_parse_header(buf, len, &h);
    uint32_t crc = record_batch_compute_crc(buf, total);
    if (crc != h.crc)
        return rb_fail(KAFKA_ERR_CORRUPT_MESSAGE, err, errlen, "CRC mismatch: stored 0x%08x, computed 0x%08x", h.crc,
                       crc);
    if (h.record_count < 1)
        return rb_fail(KAFKA_ERR_INVALID_RECORD, err, errlen, "invalid record count %" PRId32, h.record_count);
    if (h.last_offset_delta < 0 || (int64_t)h.last_offset_delta + 1 != h.record_count)
        return rb_fail(KAFKA_ERR_INVALID_RECORD, err, errlen,
                       "record count %" PRId32 " disagrees with last offset delta %" PRId32, h.record_count,
                       h.last_offset_delta);
    int compression = record_batch_compression(&h);
    if (compression > RECORD_BATCH_COMPRESSION_ZSTD)
        return rb_fail(KAFKA_ERR_INVALID_RECORD, err, errlen, "unknown compression codec %d", compression);
    if (compression == RECORD_BATCH_COMPRESSION_NONE) {
        int16_t rc = rb_validate_records(buf, total, &h, err, errlen);
        if (rc != KAFKA_ERR_NONE)
            return rc;
    }
    if (out)
        *out = h;
    return KAFKA_ERR_NONE;
}

void record_batch_set_base_offset(uint8_t *batch, int64_t base_offset)
{
    rb_put64(batch, (uint64_t)base_offset);
}

void record_batch_set_partition_leader_epoch(uint8_t *batch, int32_t epoch)
{
    rb_put32(batch + RECORD_BATCH_OFFSET_LEADER_EPOCH, (uint32_t)epoch);
}

void record_batch_update_crc(uint8_t *batch, size_t len)
{
    rb_put32(batch + RECORD_BATCH_OFFSET_CRC, record_batch_compute_crc(batch, len));
}

void record_batch_set_log_append_time(uint8_t *batch, size_t len, int64_t now_ms)
{
    uint16_t attributes = rb_be16(batch + RECORD_BATCH_OFFSET_ATTRIBUTES);
    attributes |= RECORD_BATCH_TIMESTAMP_TYPE_BIT;
    batch[RECORD_BATCH_OFFSET_ATTRIBUTES] = (uint8_t)(attributes >> 8);
    batch[RECORD_BATCH_OFFSET_ATTRIBUTES + 1] = (uint8_t)attributes;
    rb_put64(batch + RECORD_BATCH_OFFSET_MAX_TIMESTAMP, (uint64_t)now_ms);
    record_batch_update_crc(batch, len);
}

void record_batch_iter_init(struct record_batch_iter *it, const uint8_t *buf, size_t len)
{
    it->buf = buf;
    it->len = len;
    it->pos = 0;
}

int record_batch_iter_next(struct record_batch_iter *it, const uint8_t **batch, size_t *batch_len)
{
    size_t remaining = it->len - it->pos;
    if (remaining == 0)
        return 0;
    if (remaining < RECORD_BATCH_LOG_OVERHEAD)
        return -1;
    const uint8_t *p = it->buf + it->pos;
    int32_t batch_length = (int32_t)rb_be32(p + RECORD_BATCH_OFFSET_BATCH_LENGTH);
    if (batch_length < RECORD_BATCH_HEADER_SIZE - RECORD_BATCH_LOG_OVERHEAD)
        return -1;
    size_t total = (size_t)batch_length + RECORD_BATCH_LOG_OVERHEAD;
    if (total > remaining)
        return -1;
    *batch = p;
    *batch_len = total;
    it->pos += total;
    return 1;
}
