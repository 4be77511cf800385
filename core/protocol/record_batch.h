/* Kafka record batches, message format v2 (magic 2): parsing, validation of
 * untrusted bytes, in-place mutation for offset assignment, iteration over
 * batches and over the records of an uncompressed batch, and a small builder
 * for batches the broker writes itself.
 *
 * Thread-safety: every function works only on the buffers and structs passed
 * in; none keeps global state. Iterators and builders belong to one thread.
 *
 * Batch layout (big-endian):
 *   0 baseOffset int64        8 batchLength int32     12 partitionLeaderEpoch int32
 *  16 magic int8             17 crc uint32            21 attributes int16
 *  23 lastOffsetDelta int32  27 baseTimestamp int64   35 maxTimestamp int64
 *  43 producerId int64       51 producerEpoch int16   53 baseSequence int32
 *  57 recordCount int32      61 records...
 * batchLength counts the bytes after itself; the CRC32C covers bytes from
 * attributes to the end of the batch. */
#ifndef CAIRN_PROTOCOL_RECORD_BATCH_H
#define CAIRN_PROTOCOL_RECORD_BATCH_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RECORD_BATCH_MAGIC 2
#define RECORD_BATCH_HEADER_SIZE 61
/* baseOffset + batchLength: the bytes not counted by batchLength. */
#define RECORD_BATCH_LOG_OVERHEAD 12

#define RECORD_BATCH_OFFSET_BATCH_LENGTH 8
#define RECORD_BATCH_OFFSET_LEADER_EPOCH 12
#define RECORD_BATCH_OFFSET_MAGIC 16
#define RECORD_BATCH_OFFSET_CRC 17
#define RECORD_BATCH_OFFSET_ATTRIBUTES 21
#define RECORD_BATCH_OFFSET_MAX_TIMESTAMP 35

#define RECORD_BATCH_COMPRESSION_MASK 0x07
#define RECORD_BATCH_TIMESTAMP_TYPE_BIT 0x08
#define RECORD_BATCH_TRANSACTIONAL_BIT 0x10
#define RECORD_BATCH_CONTROL_BIT 0x20

enum record_batch_compression {
    RECORD_BATCH_COMPRESSION_NONE = 0,
    RECORD_BATCH_COMPRESSION_GZIP = 1,
    RECORD_BATCH_COMPRESSION_SNAPPY = 2,
    RECORD_BATCH_COMPRESSION_LZ4 = 3,
    RECORD_BATCH_COMPRESSION_ZSTD = 4,
};

/* Decoded header fields of one batch. */
struct record_batch_header {
    int64_t base_offset;
    int32_t batch_length;
    int32_t partition_leader_epoch;
    int8_t magic;
    uint32_t crc;
    int16_t attributes;
    int32_t last_offset_delta;
    int64_t base_timestamp;
    int64_t max_timestamp;
    int64_t producer_id;
    int16_t producer_epoch;
    int32_t base_sequence;
    int32_t record_count;
};

/* Decode the fixed header. Returns 0, or -1 when len < RECORD_BATCH_HEADER_SIZE.
 * Performs no validation: use record_batch_validate for untrusted input. */
int record_batch_parse_header(const uint8_t *buf, size_t len, struct record_batch_header *out);

/* Total bytes of the batch on disk / on the wire (batchLength + 12). */
static inline size_t record_batch_total_size(const struct record_batch_header *h)
{
    return (size_t)h->batch_length + RECORD_BATCH_LOG_OVERHEAD;
}
static inline int64_t record_batch_last_offset(const struct record_batch_header *h)
{
    return h->base_offset + h->last_offset_delta;
}
static inline int record_batch_compression(const struct record_batch_header *h)
{
    return h->attributes & RECORD_BATCH_COMPRESSION_MASK;
}
static inline bool record_batch_is_log_append_time(const struct record_batch_header *h)
{
    return (h->attributes & RECORD_BATCH_TIMESTAMP_TYPE_BIT) != 0;
}
static inline bool record_batch_is_transactional(const struct record_batch_header *h)
{
    return (h->attributes & RECORD_BATCH_TRANSACTIONAL_BIT) != 0;
}
static inline bool record_batch_is_control(const struct record_batch_header *h)
{
    return (h->attributes & RECORD_BATCH_CONTROL_BIT) != 0;
}

/* Validate the single batch that starts at buf (len = bytes available; the
 * batch must fit in it, following bytes are ignored). Returns KAFKA_ERR_NONE
 * and fills *out (may be NULL), or a Kafka error code with a message in err:
 *  - CORRUPT_MESSAGE: truncated, batchLength out of range, unknown magic,
 *    CRC mismatch;
 *  - UNSUPPORTED_FOR_MESSAGE_FORMAT: magic 0 or 1 (old formats not accepted);
 *  - MESSAGE_TOO_LARGE: total size above max_batch_bytes (negative: no limit);
 *  - INVALID_RECORD: recordCount < 1 or != lastOffsetDelta + 1, unknown
 *    compression codec, or (uncompressed only) a record whose varints or
 *    lengths overrun it, offsetDeltas not 0,1,2..., or a count mismatch.
 * Compressed batches are checked at the header and CRC level only. */
int16_t record_batch_validate(const uint8_t *buf, size_t len, int32_t max_batch_bytes, struct record_batch_header *out,
                              char *err, size_t errlen);

/* CRC32C over attributes..end of a batch of total size len. */
uint32_t record_batch_compute_crc(const uint8_t *batch, size_t len);
/* True when batchLength fits len and the stored CRC matches. */
bool record_batch_crc_ok(const uint8_t *batch, size_t len);

/* In-place mutators on a whole batch (len = its total size). baseOffset and
 * partitionLeaderEpoch are outside the CRC; the timestamp change is inside
 * it, so record_batch_set_log_append_time recomputes the CRC. */
void record_batch_set_base_offset(uint8_t *batch, int64_t base_offset);
void record_batch_set_partition_leader_epoch(uint8_t *batch, int32_t epoch);
void record_batch_set_log_append_time(uint8_t *batch, size_t len, int64_t now_ms);
void record_batch_update_crc(uint8_t *batch, size_t len);

/* Walks consecutive batches in a buffer (a produce request's records field,
 * a fetch response, a log segment). */
struct record_batch_iter {
    const uint8_t *buf;
    size_t len;
    size_t pos; /* start of the next batch */
};

void record_batch_iter_init(struct record_batch_iter *it, const uint8_t *buf, size_t len);
/* 1: *batch and *batch_len describe the next whole batch (only its length field
 *    is checked). 0: clean end of the buffer.
 * -1: the remaining bytes are a truncated or malformed batch (a torn tail);
 *    it->pos stays at its start. */
int record_batch_iter_next(struct record_batch_iter *it, const uint8_t **batch, size_t *batch_len);

/* One record of an uncompressed batch; pointers alias the batch buffer. */
struct record_batch_record {
    int8_t attributes;
    int32_t offset_delta;
    int64_t offset;    /* baseOffset + offsetDelta */
    int64_t timestamp; /* baseTimestamp + delta, or maxTimestamp under LogAppendTime */
    const uint8_t *key;
    int32_t key_len; /* -1: null key */
    const uint8_t *value;
    int32_t value_len; /* -1: null value */
    int32_t header_count;
    const uint8_t *headers; /* encoded headers, header_count of them */
    size_t headers_len;
};

struct record_batch_record_iter {
    const uint8_t *pos;
    const uint8_t *end;
    int64_t base_offset;
    int64_t base_timestamp;
    int64_t max_timestamp;
    bool log_append_time;
    int32_t remaining; /* records still announced by recordCount */
    char err[128];     /* set when next() returns -1 */
};

/* Start iterating the records of an uncompressed batch (len = total size).
 * Returns 0, or -1 (message in it->err) when the header is short or the
 * batch is compressed. Does not check the CRC. */
int record_batch_records_begin(struct record_batch_record_iter *it, const uint8_t *batch, size_t len);
/* 1: next record in *out. 0: end, recordCount records read and the batch
 * exactly consumed. -1: malformed (message in it->err). */
int record_batch_records_next(struct record_batch_record_iter *it, struct record_batch_record *out);

struct record_batch_header_field {
    const uint8_t *key;
    int32_t key_len;
    const uint8_t *value;
    int32_t value_len; /* -1: null */
};

struct record_batch_headers_iter {
    const uint8_t *pos;
    const uint8_t *end;
    int32_t remaining;
};

void record_batch_headers_begin(struct record_batch_headers_iter *it, const struct record_batch_record *rec);
/* 1: next header, 0: end, -1: malformed. */
int record_batch_headers_next(struct record_batch_headers_iter *it, struct record_batch_header_field *out);

/* Kafka varints (zigzag, base-128). Return bytes consumed, or 0 when the
 * input is truncated or too long. */
size_t record_batch_read_varint(const uint8_t *p, const uint8_t *end, int32_t *out);
size_t record_batch_read_varlong(const uint8_t *p, const uint8_t *end, int64_t *out);
/* Write into out (at least 10 bytes); return bytes written. */
size_t record_batch_write_varlong(uint8_t *out, int64_t value);

/* Builds an uncompressed batch in a heap buffer; for data the broker writes
 * itself (control records, internal topics, tests). */
struct record_batch_builder {
    uint8_t *buf;
    size_t len;
    size_t cap;
    int32_t count;
    int64_t base_timestamp;
    int64_t max_timestamp;
    int16_t attributes;
    int64_t producer_id;
    int16_t producer_epoch;
    int32_t base_sequence;
    bool failed; /* allocation failed; finish() reports it */
};

void record_batch_builder_init(struct record_batch_builder *b, int64_t base_timestamp);
/* Append one record; key_len / value_len -1 for null. Returns 0 or -1. */
int record_batch_builder_add(struct record_batch_builder *b, int64_t timestamp, const void *key, int32_t key_len,
                             const void *value, int32_t value_len, const struct record_batch_header_field *headers,
                             int32_t header_count);
/* Write the header and CRC, hand the buffer to the caller (free() it).
 * Returns 0, or -1 on allocation failure or an empty batch. The builder is
 * reset either way. */
int record_batch_builder_finish(struct record_batch_builder *b, uint8_t **out, size_t *out_len);
void record_batch_builder_free(struct record_batch_builder *b);

#endif
