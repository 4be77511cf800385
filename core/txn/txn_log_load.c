/* Replay of __transaction_state: each partition held here from its log
 * start to its end, batch by batch, record by record. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log/partition_log.h"
#include "protocol/generated/errors.h"
#include "protocol/generated/transaction_log_key.h"
#include "protocol/generated/transaction_log_value.h"
#include "protocol/record_batch.h"
#include "txn/txn_log.h"
#include "txn/txn_log_internal.h"
#include "util/logger.h"

#define LOAD_WARN_LIMIT 10
/* Transactions touch few partitions; a stored value claiming more is damage. */
#define MAX_LOADED_PARTITIONS 100000

/* One partition's replay; owned by the loading thread. */
struct txn_loader {
    txn_log_visit_fn visit;
    void *ctx;
    int32_t partition;
    int64_t records;
    int64_t skipped;
};

static void loader_skip(struct txn_loader *l, int64_t offset, const char *why)
{
    l->skipped++;
    if (l->skipped <= LOAD_WARN_LIMIT)
        logger_warn("txn", "%s-%d offset %" PRId64 ": skipping record: %s", TXN_LOG_TOPIC, (int)l->partition, offset,
                    why);
}

/* Decodes a value into rec, with partitions allocated in the arena. */
static int decode_value(const uint8_t *data, size_t len, struct kafka_arena *arena, struct txn_log_record *rec,
                        const char **why)
{
    struct kafka_reader r;
    kafka_reader_init(&r, data, len);
    int16_t version = kafka_read_int16(&r);
    if (r.failed || version < 0 || version > 1) {
        *why = "unknown value version";
        return -1;
    }
    struct transaction_log_value v;
    transaction_log_value_init(&v);
    if (transaction_log_value_decode(&v, &r, version, arena) != 0 || r.failed) {
        *why = "malformed value";
        return -1;
    }
    if (v.transaction_status < TXN_STATE_EMPTY || v.transaction_status > TXN_STATE_PREPARE_EPOCH_FENCE) {
        *why = "unknown transaction status";
        return -1;
    }
    size_t total = 0;
    for (int32_t t = 0; t < v.transaction_partitions_count; t++)
        total += (size_t)(v.transaction_partitions[t].partition_ids_count > 0
                              ? v.transaction_partitions[t].partition_ids_count
                              : 0);
    if (total > MAX_LOADED_PARTITIONS) {
        *why = "too many partitions";
        return -1;
    }
    struct txn_topic_partition *parts = NULL;
    if (total > 0 && !(parts = kafka_arena_alloc(arena, total * sizeof *parts))) {
        *why = "out of memory";
        return -1;
    }
    size_t n = 0;
    for (int32_t t = 0; t < v.transaction_partitions_count; t++) {
        const struct transaction_log_value_partitions_schema *s = &v.transaction_partitions[t];
        if (s->topic.len < 0) {
            *why = "null topic";
            return -1;
        }
        char *topic = kafka_arena_alloc(arena, (size_t)s->topic.len + 1);
        if (!topic) {
            *why = "out of memory";
            return -1;
        }
        memcpy(topic, s->topic.data, (size_t)s->topic.len);
        topic[s->topic.len] = '\0';
        for (int32_t i = 0; i < s->partition_ids_count; i++)
            parts[n++] = (struct txn_topic_partition){topic, s->partition_ids[i]};
    }
    *rec = (struct txn_log_record){
        .producer_id = v.producer_id,
        .previous_producer_id = v.previous_producer_id,
        .producer_epoch = v.producer_epoch,
        .timeout_ms = v.transaction_timeout_ms,
        .state = (enum txn_state)v.transaction_status,
        .partitions = parts,
        .partition_count = n,
        .last_update_ms = v.transaction_last_update_timestamp_ms,
        .start_ms = v.transaction_start_timestamp_ms,
    };
    return 0;
}

static void load_record(struct txn_loader *l, const struct record_batch_record *rec, struct kafka_arena *arena)
{
    if (rec->key_len < 0) {
        loader_skip(l, rec->offset, "null key");
        return;
    }
    struct kafka_reader r;
    kafka_reader_init(&r, rec->key, (size_t)rec->key_len);
    int16_t version = kafka_read_int16(&r);
    struct transaction_log_key key;
    transaction_log_key_init(&key);
    if (r.failed || version != 0 || transaction_log_key_decode(&key, &r, 0, arena) != 0 || r.failed ||
        key.transactional_id.len <= 0 || memchr(key.transactional_id.data, '\0', (size_t)key.transactional_id.len)) {
        loader_skip(l, rec->offset, "malformed or unknown key");
        return;
    }
    char *id = kafka_arena_alloc(arena, (size_t)key.transactional_id.len + 1);
    if (!id) {
        loader_skip(l, rec->offset, "out of memory");
        return;
    }
    memcpy(id, key.transactional_id.data, (size_t)key.transactional_id.len);
    id[key.transactional_id.len] = '\0';
    if (rec->value_len < 0) {
        l->visit(l->ctx, id, NULL);
        l->records++;
        return;
    }
    struct txn_log_record value;
    const char *why = "";
    if (decode_value(rec->value, (size_t)rec->value_len, arena, &value, &why) != 0) {
        loader_skip(l, rec->offset, why);
        return;
    }
    l->visit(l->ctx, id, &value);
    l->records++;
}

static void load_batch(struct txn_loader *l, const uint8_t *batch, size_t len, const struct record_batch_header *h)
{
    if (!record_batch_crc_ok(batch, len)) {
        loader_skip(l, h->base_offset, "batch CRC mismatch");
        return;
    }
    if (record_batch_is_control(h))
        return;
    if (record_batch_compression(h) != RECORD_BATCH_COMPRESSION_NONE) {
        loader_skip(l, h->base_offset, "compressed batch");
        return;
    }
    struct record_batch_record_iter it;
    if (record_batch_records_begin(&it, batch, len) != 0) {
        loader_skip(l, h->base_offset, it.err);
        return;
    }
    struct record_batch_record rec;
    int rc;
    while ((rc = record_batch_records_next(&it, &rec)) == 1) {
        struct kafka_arena arena;
        kafka_arena_init(&arena);
        load_record(l, &rec, &arena);
        kafka_arena_free(&arena);
    }
    if (rc < 0)
        loader_skip(l, h->base_offset, it.err);
}

static int read_fully(int fd, uint8_t *buf, size_t len, int64_t pos)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(fd, buf + done, len - done, (off_t)(pos + (int64_t)done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? errno : EIO;
        done += (size_t)n;
    }
    return 0;
}

static int load_partition(struct txn_loader *l, struct partition_log *log, uint8_t **buf, size_t *cap,
                          size_t read_size, char *err, size_t errlen)
{
    const char *dir = partition_log_dir(log);
    int64_t offset = partition_log_start_offset(log);
    int64_t end = partition_log_end_offset(log);
    while (offset < end) {
        struct log_read_result rr;
        int16_t code = partition_log_read(log, offset, (int32_t)(read_size > INT32_MAX ? INT32_MAX : read_size),
                                          end, &rr);
        if (code == KAFKA_ERR_OFFSET_OUT_OF_RANGE && partition_log_start_offset(log) > offset) {
            offset = partition_log_start_offset(log);
            continue;
        }
        if (code != KAFKA_ERR_NONE) {
            snprintf(err, errlen, "cannot read %s at offset %" PRId64 ": error %d", dir, offset, (int)code);
            return -1;
        }
        if (rr.len <= 0)
            break;
        if ((uint64_t)rr.len > (uint64_t)INT32_MAX) {
            close(rr.fd);
            snprintf(err, errlen, "%s: read of %" PRId64 " bytes is too large", dir, rr.len);
            return -1;
        }
        if ((size_t)rr.len > *cap) {
            uint8_t *grown = realloc(*buf, (size_t)rr.len);
            if (!grown) {
                close(rr.fd);
                snprintf(err, errlen, "out of memory reading %s", dir);
                return -1;
            }
            *buf = grown;
            *cap = (size_t)rr.len;
        }
        int rc = read_fully(rr.fd, *buf, (size_t)rr.len, rr.file_pos);
        close(rr.fd);
        if (rc != 0) {
            snprintf(err, errlen, "cannot read %s at offset %" PRId64 ": %s", dir, offset, strerror(rc));
            return -1;
        }
        int64_t before = offset;
        struct record_batch_iter it;
        record_batch_iter_init(&it, *buf, (size_t)rr.len);
        const uint8_t *batch;
        size_t batch_len;
        while ((rc = record_batch_iter_next(&it, &batch, &batch_len)) == 1) {
            struct record_batch_header h;
            if (record_batch_parse_header(batch, batch_len, &h) != 0 || h.magic != RECORD_BATCH_MAGIC) {
                rc = -1;
                break;
            }
            if (record_batch_last_offset(&h) < offset)
                continue;
            load_batch(l, batch, batch_len, &h);
            offset = record_batch_last_offset(&h) + 1;
        }
        if (rc < 0) {
            snprintf(err, errlen, "%s: malformed batch framing after offset %" PRId64, dir, offset);
            return -1;
        }
        if (offset <= before) {
            logger_warn("txn", "%s: no progress reading at offset %" PRId64 "; stopping its load", dir, offset);
            break;
        }
    }
    return 0;
}

int txn_log_load(struct txn_log *tl, txn_log_visit_fn visit, void *ctx, char *err, size_t errlen)
{
    if (!tl || !visit) {
        snprintf(err, errlen, "txn_log_load needs a transaction log and a visitor");
        return -1;
    }
    size_t cap = tl->load_buffer_size;
    uint8_t *buf = malloc(cap);
    if (!buf) {
        snprintf(err, errlen, "out of memory for the %zu-byte load buffer", cap);
        return -1;
    }
    int rc = 0;
    for (int32_t p = 0; p < tl->partition_count && rc == 0; p++) {
        if (!tl->partitions[p])
            continue;
        struct txn_loader l = {.visit = visit, .ctx = ctx, .partition = p};
        rc = load_partition(&l, tl->partitions[p], &buf, &cap, tl->load_buffer_size, err, errlen);
        if (l.skipped > 0)
            logger_warn("txn", "%s-%d: skipped %" PRId64 " unreadable record(s) or batch(es)", TXN_LOG_TOPIC, (int)p,
                        l.skipped);
    }
    free(buf);
    return rc;
}
