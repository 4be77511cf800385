/* Validation of appended batches before anything is written: Kafka's
 * LogValidator checks per batch (log_validator.c) and, for compacted
 * topics, that every record has a key. */
#include "log/partition_log_internal.h"

#include <stdio.h>
#include <stdlib.h>

#include "codec/record_codec.h"
#include "log/log_validator.h"
#include "protocol/generated/errors.h"
#include "util/clock.h"

/* Where check_keys notes keyless records: the index of each within its
 * batch, at most cap of them, and how many there are. NULL: stop at the
 * first. */
struct keyless_scan {
    int32_t *indexes;
    int32_t cap;
    int32_t count;
};

/* Kafka refuses keyless records for compacted topics: the cleaner could
 * never replace them. Compressed batches are opened for the check (only
 * for compacted topics: callers skip it otherwise). Returns
 * KAFKA_ERR_NONE, INVALID_RECORD (a keyless record) or CORRUPT_MESSAGE
 * (records that cannot be read), with a message in err. */
static int16_t check_keys(const struct log_config *cfg, const uint8_t *batch, size_t len,
                          const struct record_batch_header *h, struct keyless_scan *scan, char *err, size_t errlen)
{
    uint8_t *plain = NULL;
    size_t plain_len = len;
    const uint8_t *records = batch;
    if (record_batch_compression(h) != RECORD_BATCH_COMPRESSION_NONE) {
        char why[160];
        if (record_codec_inflate_batch(batch, len, log_decompressed_limit(cfg), &plain, &plain_len, why, sizeof why) !=
            0) {
            snprintf(err, errlen, "cannot decompress the records: %.96s", why);
            return KAFKA_ERR_CORRUPT_MESSAGE;
        }
        records = plain;
    }
    struct record_batch_record_iter it;
    struct record_batch_record rec;
    int16_t code = KAFKA_ERR_NONE;
    int32_t index = 0;
    int rc = record_batch_records_begin(&it, records, plain_len);
    while (rc == 0 && (rc = record_batch_records_next(&it, &rec)) == 1) {
        rc = 0;
        if (rec.key_len < 0) {
            snprintf(err, errlen, "Compacted topic cannot accept message without key");
            code = KAFKA_ERR_INVALID_RECORD;
            if (!scan)
                break;
            if (scan->count < scan->cap)
                scan->indexes[scan->count] = index;
            scan->count++;
        }
        index++;
    }
    if (code == KAFKA_ERR_NONE && rc < 0 && plain) {
        /* Uncompressed records were already checked by validate. */
        snprintf(err, errlen, "malformed records in a compressed batch: %.76s", it.err);
        code = KAFKA_ERR_CORRUPT_MESSAGE;
    }
    free(plain);
    return code;
}

int32_t partition_log_keyless_records(const struct partition_log *log, const uint8_t *batches, size_t len,
                                      int32_t *indexes, int32_t cap)
{
    struct keyless_scan scan = {.indexes = indexes, .cap = cap, .count = 0};
    struct record_batch_iter it;
    const uint8_t *batch;
    size_t blen;
    char err[160];
    int rc;
    if (!log->cfg.cleanup_compact)
        return 0;
    record_batch_iter_init(&it, batches, len);
    while ((rc = record_batch_iter_next(&it, &batch, &blen)) == 1) {
        struct record_batch_header h;
        if (record_batch_validate(batch, blen, log->cfg.max_message_bytes, &h, err, sizeof err) != KAFKA_ERR_NONE)
            return -1;
        if (record_batch_is_control(&h))
            continue;
        int16_t code = check_keys(&log->cfg, batch, blen, &h, &scan, err, sizeof err);
        if (code != KAFKA_ERR_NONE && code != KAFKA_ERR_INVALID_RECORD)
            return -1;
    }
    return rc < 0 ? -1 : scan.count;
}

/* Validate every batch and count records; nothing is modified. */
int16_t partition_log_validate_all(const struct partition_log *log, enum log_append_origin origin,
                                   const uint8_t *batches, size_t len, int32_t *records, int32_t *batch_count,
                                   struct log_append_result *res)
{
    struct record_batch_iter it;
    const uint8_t *batch;
    size_t blen;
    int rc;
    int64_t total = 0;
    int64_t now = clock_wall_ms();
    *batch_count = 0;
    record_batch_iter_init(&it, batches, len);
    while ((rc = record_batch_iter_next(&it, &batch, &blen)) == 1) {
        struct record_batch_header h;
        int16_t code = record_batch_validate(batch, blen, log->cfg.max_message_bytes, &h, res->error_message,
                                             sizeof res->error_message);
        if (code != KAFKA_ERR_NONE)
            return code;
        /* A follower keeps what its leader accepted. */
        if (origin != LOG_APPEND_REPLICATION) {
            code = log_validate_records(&log->cfg, batch, blen, &h, now, &res->record_index, res->error_message,
                                        sizeof res->error_message);
            if (code != KAFKA_ERR_NONE)
                return code;
        }
        if (log->cfg.cleanup_compact && origin != LOG_APPEND_REPLICATION && !record_batch_is_control(&h)) {
            code = check_keys(&log->cfg, batch, blen, &h, NULL, res->error_message, sizeof res->error_message);
            if (code != KAFKA_ERR_NONE)
                return code;
        }
        total += h.record_count;
        (*batch_count)++;
    }
    if (rc < 0) {
        /* Let validate name the reason (too large, bad magic, truncated). */
        int16_t code = record_batch_validate(batches + it.pos, len - it.pos, log->cfg.max_message_bytes, NULL,
                                             res->error_message, sizeof res->error_message);
        return code != KAFKA_ERR_NONE ? code : KAFKA_ERR_CORRUPT_MESSAGE;
    }
    if (total > INT32_MAX) {
        snprintf(res->error_message, sizeof res->error_message, "too many records");
        return KAFKA_ERR_INVALID_RECORD;
    }
    *records = (int32_t)total;
    return KAFKA_ERR_NONE;
}
