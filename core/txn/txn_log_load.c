/* Replay of __transaction_state, record by record of the batches
 * internal_topic_replay hands over in log order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coordinator/internal_topic.h"
#include "protocol/generated/transaction_log_key.h"
#include "protocol/generated/transaction_log_value.h"
#include "protocol/record_batch.h"
#include "txn/txn_log.h"
#include "txn/txn_log_internal.h"

/* Transactions touch few partitions; a stored value claiming more is damage. */
#define MAX_LOADED_PARTITIONS 100000

/* The replay's state; owned by the loading thread. */
struct txn_loader {
    txn_log_visit_fn visit;
    void *ctx;
    struct internal_topic_replay *replay; /* the partition being replayed */
};

static void loader_skip(struct txn_loader *l, int64_t offset, const char *why)
{
    internal_topic_replay_skip(l->replay, offset, why);
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
        return;
    }
    struct txn_log_record value;
    const char *why = "";
    if (decode_value(rec->value, (size_t)rec->value_len, arena, &value, &why) != 0) {
        loader_skip(l, rec->offset, why);
        return;
    }
    l->visit(l->ctx, id, &value);
}

static void load_batch(void *ctx, struct internal_topic_replay *r, const uint8_t *batch, size_t len,
                       const struct record_batch_header *h)
{
    struct txn_loader *l = ctx;
    l->replay = r;
    if (record_batch_is_control(h))
        return;
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

int txn_log_load(struct txn_log *tl, txn_log_visit_fn visit, void *ctx, char *err, size_t errlen)
{
    return txn_log_load_partition(tl, -1, visit, ctx, err, errlen);
}

int txn_log_load_partition(struct txn_log *tl, int32_t partition, txn_log_visit_fn visit, void *ctx, char *err,
                           size_t errlen)
{
    if (!tl || !visit) {
        snprintf(err, errlen, "txn_log_load needs a transaction log and a visitor");
        return -1;
    }
    struct txn_loader l = {.visit = visit, .ctx = ctx};
    if (partition < 0)
        return internal_topic_replay(tl->topic, tl->load_buffer_size, load_batch, NULL, &l, err, errlen);
    return internal_topic_replay_partition(tl->topic, partition, tl->load_buffer_size, load_batch, NULL, &l, err,
                                           errlen);
}
