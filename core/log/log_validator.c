/* Record-level validation of appended batches, as Kafka's LogValidator:
 * compressed batches are opened within a bound set by their declared
 * record count and the topic's max.message.bytes, then walked like
 * uncompressed ones; CreateTime timestamps are checked against the
 * topic's window. */
#include "log/log_validator.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "codec/record_codec.h"
#include "log/partition_log_internal.h"
#include "protocol/generated/errors.h"

/* Room for one record's own framing on top of its key, value and headers. */
#define LOG_VALIDATOR_RECORD_OVERHEAD 64
/* A thread's decompression buffer is kept for the next batch up to this
 * size; a rare larger batch gets its memory back at once. */
#define LOG_VALIDATOR_SCRATCH_KEEP (8u * 1024 * 1024)

/* One per thread that validates (pthread key): a fresh buffer per batch
 * cost more in page faults and copies than decompressing did. */
struct scratch {
    uint8_t *buf;
    size_t cap;
};

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static bool scratch_key_ok;

static void scratch_free(void *p)
{
    struct scratch *sc = p;
    free(sc->buf);
    free(sc);
}

static void scratch_init(void)
{
    scratch_key_ok = pthread_key_create(&scratch_key, scratch_free) == 0;
}

static struct scratch *thread_scratch(void)
{
    pthread_once(&scratch_once, scratch_init);
    if (!scratch_key_ok)
        return NULL;
    struct scratch *sc = pthread_getspecific(scratch_key);
    if (!sc && (sc = calloc(1, sizeof *sc)) != NULL && pthread_setspecific(scratch_key, sc) != 0) {
        free(sc);
        sc = NULL;
    }
    return sc;
}

static void scratch_trim(struct scratch *sc)
{
    if (sc->cap > LOG_VALIDATOR_SCRATCH_KEEP) {
        free(sc->buf);
        sc->buf = NULL;
        sc->cap = 0;
    }
}

size_t log_validator_decompress_bound(const struct log_config *cfg, int32_t record_count)
{
    size_t limit = log_decompressed_limit(cfg);
    size_t per_record = (cfg->max_message_bytes > 0 ? (size_t)cfg->max_message_bytes : 0) +
                        LOG_VALIDATOR_RECORD_OVERHEAD;
    if (record_count <= 0)
        return 0;
    if ((size_t)record_count > limit / per_record)
        return limit;
    return (size_t)record_count * per_record;
}

static bool timestamps_checked(const struct log_config *cfg)
{
    return cfg->message_timestamp_type == LOG_TIMESTAMP_CREATE_TIME &&
           (cfg->message_timestamp_before_max_ms != INT64_MAX || cfg->message_timestamp_after_max_ms != INT64_MAX);
}

/* now - d and now + d (d >= 0), held inside int64. */
static int64_t minus_sat(int64_t now, int64_t d)
{
    return now < INT64_MIN + d ? INT64_MIN : now - d;
}

static int64_t plus_sat(int64_t now, int64_t d)
{
    return d > INT64_MAX - now ? INT64_MAX : now + d;
}

/* Kafka skips records without a timestamp (-1). */
static bool timestamp_outside(const struct log_config *cfg, int64_t ts, int64_t now)
{
    if (ts == -1)
        return false;
    if (ts <= now)
        return (uint64_t)now - (uint64_t)ts > (uint64_t)cfg->message_timestamp_before_max_ms;
    return (uint64_t)ts - (uint64_t)now > (uint64_t)cfg->message_timestamp_after_max_ms;
}

static int16_t walk_records(const struct log_config *cfg, const uint8_t *records, size_t len,
                            const struct record_batch_header *h, int64_t now, bool check_ts, int32_t *record_index,
                            char *err, size_t errlen)
{
    struct record_batch_record_iter it;
    struct record_batch_record rec;
    if (record_batch_records_begin(&it, records, len) != 0) {
        snprintf(err, errlen, "%s", it.err);
        return KAFKA_ERR_INVALID_RECORD;
    }
    int32_t index = 0;
    int rc;
    while ((rc = record_batch_records_next(&it, &rec)) == 1) {
        if (rec.offset_delta != index) {
            *record_index = index;
            snprintf(err, errlen, "record %" PRId32 " has offset delta %" PRId32, index, rec.offset_delta);
            return KAFKA_ERR_INVALID_RECORD;
        }
        if (check_ts && timestamp_outside(cfg, rec.timestamp, now)) {
            *record_index = index;
            snprintf(err, errlen,
                     "Timestamp %" PRId64 " of message with offset %" PRId32
                     " is out of range. The timestamp should be within [%" PRId64 ", %" PRId64 "]",
                     rec.timestamp, index, minus_sat(now, cfg->message_timestamp_before_max_ms),
                     plus_sat(now, cfg->message_timestamp_after_max_ms));
            return KAFKA_ERR_INVALID_TIMESTAMP;
        }
        index++;
    }
    if (rc < 0) {
        snprintf(err, errlen, "record %" PRId32 ": %s", index, it.err);
        return KAFKA_ERR_INVALID_RECORD;
    }
    if (index != h->record_count) {
        snprintf(err, errlen, "batch holds %" PRId32 " records but declares %" PRId32, index, h->record_count);
        return KAFKA_ERR_INVALID_RECORD;
    }
    return KAFKA_ERR_NONE;
}

int16_t log_validate_records(const struct log_config *cfg, const uint8_t *batch, size_t len,
                             const struct record_batch_header *h, int64_t now_ms, int32_t *record_index, char *err,
                             size_t errlen)
{
    *record_index = -1;
    if (record_batch_is_log_append_time(h)) {
        snprintf(err, errlen, "Invalid timestamp type in batch: producers must not set LogAppendTime");
        return KAFKA_ERR_INVALID_TIMESTAMP;
    }
    bool check_ts = timestamps_checked(cfg);
    if (record_batch_compression(h) == RECORD_BATCH_COMPRESSION_NONE) {
        /* record_batch_validate walked the records already; walk again
         * only when there are timestamps to hold to a window. */
        if (!check_ts)
            return KAFKA_ERR_NONE;
        return walk_records(cfg, batch, len, h, now_ms, true, record_index, err, errlen);
    }
#ifdef CAIRN_BENCH_SKIP_RECORD_VALIDATION
    /* Benchmark builds only (docs/benchmarks.md): compressed batches stored
     * unopened, to measure what opening them costs. */
    if (!check_ts)
        return KAFKA_ERR_NONE;
#endif
    /* Refuse a count no payload of this size could hold before
     * decompressing anything. */
    size_t bound = log_validator_decompress_bound(cfg, h->record_count);
    if ((size_t)h->record_count > bound / LOG_VALIDATOR_MIN_RECORD_BYTES) {
        snprintf(err, errlen, "batch declares %" PRId32 " records, more than %zu bytes of records can hold",
                 h->record_count, bound);
        return KAFKA_ERR_INVALID_RECORD;
    }
    struct scratch *sc = thread_scratch();
    if (!sc) {
        snprintf(err, errlen, "out of memory");
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    }
    size_t plain_len = 0;
    char why[160];
    if (record_codec_inflate_batch_into(batch, len, bound, &sc->buf, &sc->cap, &plain_len, why, sizeof why) != 0) {
        scratch_trim(sc);
        snprintf(err, errlen, "cannot decompress the records: %.120s", why);
        return KAFKA_ERR_CORRUPT_MESSAGE;
    }
    int16_t code = walk_records(cfg, sc->buf, plain_len, h, now_ms, check_ts, record_index, err, errlen);
    scratch_trim(sc);
    return code;
}
