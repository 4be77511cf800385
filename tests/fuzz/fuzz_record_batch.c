/* Fuzzes what a produced record set goes through before it is appended:
 * framing into batches, validation (header, CRC, counts, the record walk),
 * then the record and header iterators, decompression of compressed
 * batches, and the in-place rewrites the log makes.
 *
 * Input: one flag byte, then the record set. Flag bit 0 writes the right
 * CRC into each batch first, so the fuzzer gets past the CRC check into the
 * records; without it the CRC check itself is exercised.
 *
 * Invariants (a violation traps):
 *  - a validated uncompressed batch iterates to exactly its record count,
 *    with offset deltas 0, 1, 2..., and every header of every record reads;
 *  - after the log's rewrites (base offset, leader epoch, LogAppendTime)
 *    the batch still validates. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/record_codec.h"
#include "protocol/generated/errors.h"
#include "protocol/record_batch.h"

#define FUZZ_DECOMPRESSED_LIMIT (1 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk_records(const uint8_t *batch, size_t len, int32_t expected, bool must_succeed)
{
    struct record_batch_record_iter it;
    struct record_batch_record rec;
    if (record_batch_records_begin(&it, batch, len) != 0) {
        if (must_succeed)
            __builtin_trap();
        return;
    }
    int32_t seen = 0;
    int rc;
    while ((rc = record_batch_records_next(&it, &rec)) == 1) {
        if (must_succeed && rec.offset_delta != seen)
            __builtin_trap();
        struct record_batch_headers_iter hit;
        struct record_batch_header_field field;
        record_batch_headers_begin(&hit, &rec);
        int32_t headers = 0;
        int hrc;
        while ((hrc = record_batch_headers_next(&hit, &field)) == 1)
            headers++;
        if (must_succeed && (hrc != 0 || headers != rec.header_count))
            __builtin_trap();
        seen++;
    }
    if (must_succeed && (rc != 0 || seen != expected))
        __builtin_trap();
}

static void check_batch(uint8_t *batch, size_t len)
{
    struct record_batch_header h;
    char err[256];
    if (record_batch_validate(batch, len, -1, &h, err, sizeof err) != KAFKA_ERR_NONE) {
        /* Refused batches are still read by the iterators' own bounds checks. */
        walk_records(batch, len, 0, false);
        return;
    }
    if (!record_batch_crc_ok(batch, len))
        __builtin_trap();
    if (record_batch_compression(&h) == RECORD_BATCH_COMPRESSION_NONE) {
        walk_records(batch, len, h.record_count, true);
    } else {
        uint8_t *plain = NULL;
        size_t plain_len = 0;
        if (record_codec_inflate_batch(batch, len, FUZZ_DECOMPRESSED_LIMIT, &plain, &plain_len, err, sizeof err) == 0) {
            walk_records(plain, plain_len, h.record_count, false);
            free(plain);
        }
    }
    /* What the log does in place before writing. */
    record_batch_set_base_offset(batch, 1234567);
    record_batch_set_partition_leader_epoch(batch, 7);
    record_batch_set_log_append_time(batch, len, 1700000000000);
    if (record_batch_validate(batch, len, -1, NULL, err, sizeof err) != KAFKA_ERR_NONE)
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    bool fix_crc = data[0] & 1;
    size_t len = size - 1;
    uint8_t *records = malloc(len ? len : 1);
    if (!records)
        return 0;
    memcpy(records, data + 1, len);
    struct record_batch_iter it;
    const uint8_t *batch;
    size_t blen;
    record_batch_iter_init(&it, records, len);
    while (record_batch_iter_next(&it, &batch, &blen) == 1) {
        uint8_t *mutable_batch = records + (batch - records);
        if (fix_crc)
            record_batch_update_crc(mutable_batch, blen);
        check_batch(mutable_batch, blen);
    }
    free(records);
    return 0;
}
