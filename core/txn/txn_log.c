/* The transaction log: opening __transaction_state (through
 * group/internal_topic.c, as __consumer_offsets), the record codec and
 * writes. Replay lives in txn_log_load.c. */
#include "txn/txn_log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coordinator/internal_topic.h"
#include "log/partition_log.h"
#include "protocol/generated/errors.h"
#include "protocol/generated/transaction_log_key.h"
#include "protocol/generated/transaction_log_value.h"
#include "protocol/record_batch.h"
#include "txn/txn_log_internal.h"
#include "util/clock.h"
#include "util/logger.h"

#define DEFAULT_LOAD_BUFFER_SIZE 5242880

int txn_log_open(const struct txn_log_options *opts, struct txn_log **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!opts || !opts->logs || !opts->metadata) {
        snprintf(err, errlen, "the transaction log needs a log manager and a metadata store");
        return -1;
    }
    struct txn_log *tl = calloc(1, sizeof *tl);
    if (!tl) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    tl->load_buffer_size = (size_t)(opts->load_buffer_size > 0 ? opts->load_buffer_size : DEFAULT_LOAD_BUFFER_SIZE);
    const struct internal_topic_options topic = {
        .name = TXN_LOG_TOPIC,
        .component = "txn",
        .config_prefix = "transaction.state.log",
        .logs = opts->logs,
        .metadata = opts->metadata,
        .num_partitions = opts->num_partitions,
        .replication_factor = opts->replication_factor,
        .segment_bytes = opts->segment_bytes,
        .node_id = opts->node_id,
        .fetch_purgatory = opts->fetch_purgatory,
        .expected_brokers = opts->expected_brokers,
        .min_insync_replicas = opts->min_insync_replicas,
    };
    if (internal_topic_open(&topic, &tl->topic, err, errlen) != 0) {
        free(tl);
        return -1;
    }
    *out = tl;
    return 0;
}

void txn_log_close(struct txn_log *tl)
{
    if (!tl)
        return;
    internal_topic_close(tl->topic);
    free(tl);
}

int32_t txn_log_partition_count(const struct txn_log *tl)
{
    return tl ? internal_topic_partition_count(tl->topic) : 0;
}

struct internal_topic *txn_log_topic(const struct txn_log *tl)
{
    return tl ? tl->topic : NULL;
}

/* How long a write of the transaction log waits for its replication (Kafka
 * waits request.timeout.ms; shorter here, as the coordinator holds its lock
 * meanwhile): the client then retries on COORDINATOR_NOT_AVAILABLE. */
#define TXN_LOG_REPLICATION_TIMEOUT_MS 5000

static int16_t log_for_id(struct txn_log *tl, const char *id, struct partition_log **out)
{
    return internal_topic_log_for_key(tl ? tl->topic : NULL, id, out);
}

int16_t txn_log_check(struct txn_log *tl, const char *transactional_id)
{
    struct partition_log *log;
    return log_for_id(tl, transactional_id, &log);
}

int txn_log_encode_key(struct kafka_writer *w, const char *transactional_id)
{
    struct transaction_log_key key;
    transaction_log_key_init(&key);
    key.transactional_id = (struct kafka_str){transactional_id, (int32_t)strlen(transactional_id)};
    kafka_write_int16(w, 0);
    return transaction_log_key_encode(&key, w, 0) != 0 || w->failed ? -1 : 0;
}

/* Groups the partitions by topic (in first-seen order) for the value's
 * topic list. Returns the topic count, or -1 when out of memory. */
static int32_t group_by_topic(const struct txn_log_record *rec, struct kafka_arena *arena,
                              struct transaction_log_value_partitions_schema **out)
{
    *out = NULL;
    if (rec->partition_count == 0)
        return 0;
    struct transaction_log_value_partitions_schema *topics = kafka_arena_alloc(arena,
                                                                               rec->partition_count * sizeof *topics);
    int32_t *ids = kafka_arena_alloc(arena, rec->partition_count * sizeof *ids);
    if (!topics || !ids)
        return -1;
    int32_t count = 0;
    size_t used = 0;
    bool *placed = kafka_arena_alloc(arena, rec->partition_count * sizeof *placed);
    if (!placed)
        return -1;
    memset(placed, 0, rec->partition_count * sizeof *placed);
    for (size_t i = 0; i < rec->partition_count; i++) {
        if (placed[i])
            continue;
        struct transaction_log_value_partitions_schema *t = &topics[count++];
        transaction_log_value_partitions_schema_init(t);
        t->topic = (struct kafka_str){rec->partitions[i].topic, (int32_t)strlen(rec->partitions[i].topic)};
        t->partition_ids = ids + used;
        for (size_t j = i; j < rec->partition_count; j++) {
            if (placed[j] || strcmp(rec->partitions[j].topic, rec->partitions[i].topic) != 0)
                continue;
            placed[j] = true;
            ids[used++] = rec->partitions[j].partition;
            t->partition_ids_count++;
        }
    }
    *out = topics;
    return count;
}

int txn_log_encode_value(struct kafka_writer *w, const struct txn_log_record *rec)
{
    struct kafka_arena arena;
    kafka_arena_init(&arena);
    struct transaction_log_value v;
    transaction_log_value_init(&v);
    /* Version 1 only when it carries something version 0 cannot. */
    int16_t version = rec->previous_producer_id >= 0 ? 1 : 0;
    v.producer_id = rec->producer_id;
    if (version >= 1)
        v.previous_producer_id = rec->previous_producer_id;
    v.producer_epoch = rec->producer_epoch;
    v.transaction_timeout_ms = rec->timeout_ms;
    v.transaction_status = (int8_t)rec->state;
    int32_t topics = group_by_topic(rec, &arena, &v.transaction_partitions);
    v.transaction_partitions_count = topics < 0 ? 0 : topics;
    v.transaction_last_update_timestamp_ms = rec->last_update_ms;
    v.transaction_start_timestamp_ms = rec->start_ms;
    kafka_write_int16(w, version);
    int rc = topics < 0 || transaction_log_value_encode(&v, w, version) != 0 || w->failed ? -1 : 0;
    kafka_arena_free(&arena);
    return rc;
}

int16_t txn_log_write(struct txn_log *tl, const char *transactional_id, const struct txn_log_record *rec)
{
    struct partition_log *log;
    int16_t code = log_for_id(tl, transactional_id, &log);
    if (code != KAFKA_ERR_NONE)
        return code;
    struct kafka_writer key, value;
    if (kafka_writer_init(&key, 64) != 0)
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    if (kafka_writer_init(&value, 256) != 0) {
        kafka_writer_free(&key);
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    }
    int64_t now = clock_wall_ms();
    struct record_batch_builder builder;
    record_batch_builder_init(&builder, now);
    uint8_t *batch = NULL;
    size_t len = 0;
    bool ok = txn_log_encode_key(&key, transactional_id) == 0 && (!rec || txn_log_encode_value(&value, rec) == 0) &&
              key.len <= INT32_MAX && value.len <= INT32_MAX &&
              record_batch_builder_add(&builder, now, key.buf, (int32_t)key.len, rec ? value.buf : NULL,
                                       rec ? (int32_t)value.len : -1, NULL, 0) == 0 &&
              record_batch_builder_finish(&builder, &batch, &len) == 0;
    kafka_writer_free(&key);
    kafka_writer_free(&value);
    record_batch_builder_free(&builder);
    if (!ok) {
        free(batch);
        logger_warn("txn", "cannot encode the record of transactional id %s", transactional_id);
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    }
    char about[256];
    snprintf(about, sizeof about, "transactional id %s", transactional_id);
    /* Replicated before the coordinator acts on it: a state only this node
     * had would be lost with its leadership, and the next coordinator would
     * take an aborted transaction for an open one (and commit it). */
    code = internal_topic_append_replicated(tl->topic, log, batch, len, INTERNAL_TOPIC_FLUSH_RECORDS,
                                            TXN_LOG_REPLICATION_TIMEOUT_MS, about);
    free(batch);
    return txn_log_append_error(code);
}

int16_t txn_log_append_error(int16_t code)
{
    switch (code) {
    case KAFKA_ERR_NONE:
        return KAFKA_ERR_NONE;
    /* The log can take no write (full or failed disk, offline) or is no
     * longer led here: the client finds the coordinator again. */
    case KAFKA_ERR_KAFKA_STORAGE_ERROR:
    case KAFKA_ERR_NOT_LEADER_OR_FOLLOWER:
        return KAFKA_ERR_NOT_COORDINATOR;
    /* Not writable for now: the client retries. */
    case KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION:
    case KAFKA_ERR_NOT_ENOUGH_REPLICAS:
    case KAFKA_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND:
    case KAFKA_ERR_REQUEST_TIMED_OUT:
        return KAFKA_ERR_COORDINATOR_NOT_AVAILABLE;
    default:
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    }
}
