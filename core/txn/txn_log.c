/* The transaction log: opening __transaction_state, the record codec and
 * writes. Replay lives in txn_log_load.c.
 *
 * Like __consumer_offsets, the topic is cleanup.policy=compact with
 * retention.ms=-1: the partition log does not compact yet and applies
 * retention.ms whatever the policy, which would drop live transactions. */
#include "txn/txn_log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group/coordinator_partition.h"
#include "log/log_manager.h"
#include "log/partition_log.h"
#include "metadata/metadata_store.h"
#include "protocol/generated/errors.h"
#include "protocol/generated/transaction_log_key.h"
#include "protocol/generated/transaction_log_value.h"
#include "protocol/record_batch.h"
#include "txn/txn_log_internal.h"
#include "util/clock.h"
#include "util/logger.h"

#define DEFAULT_NUM_PARTITIONS 50
#define DEFAULT_REPLICATION_FACTOR 3
#define DEFAULT_SEGMENT_BYTES 104857600
#define DEFAULT_LOAD_BUFFER_SIZE 5242880

static int ensure_topic(const struct txn_log_options *opts, int32_t num_partitions, int32_t segment_bytes, char *err,
                        size_t errlen)
{
    const struct metadata_image *img = metadata_image_acquire(opts->metadata);
    bool exists = metadata_image_topic_by_name(img, TXN_LOG_TOPIC, strlen(TXN_LOG_TOPIC)) != NULL;
    int32_t live = metadata_image_live_broker_count(img);
    metadata_image_release(img);
    if (exists)
        return 0;
    if (live < 1) {
        snprintf(err, errlen, "no live broker to place %s on", TXN_LOG_TOPIC);
        return -1;
    }
    int16_t rf = opts->replication_factor > 0 ? opts->replication_factor : DEFAULT_REPLICATION_FACTOR;
    if (rf > live) {
        logger_info("txn",
                    "transaction.state.log.replication.factor is %d but %d broker(s) are live: creating %s with "
                    "replication factor %d",
                    (int)rf, (int)live, TXN_LOG_TOPIC, (int)live);
        rf = (int16_t)live;
    }
    char segment[24];
    snprintf(segment, sizeof segment, "%" PRId32, segment_bytes);
    const struct metadata_config_kv configs[] = {
        {"cleanup.policy", "compact"},
        {"segment.bytes", segment},
        {"retention.ms", "-1"},
    };
    char why[256] = "";
    int16_t rc = metadata_create_topic(opts->metadata, TXN_LOG_TOPIC, num_partitions, rf, NULL, 0, configs,
                                       (int32_t)(sizeof configs / sizeof configs[0]), false, NULL, why, sizeof why);
    if (rc == KAFKA_ERR_TOPIC_ALREADY_EXISTS)
        return 0;
    if (rc != KAFKA_ERR_NONE) {
        snprintf(err, errlen, "cannot create %s: %s (error %d)", TXN_LOG_TOPIC, why, (int)rc);
        return -1;
    }
    logger_info("txn", "created %s with %d partitions, replication factor %d", TXN_LOG_TOPIC, (int)num_partitions,
                (int)rf);
    return 0;
}

static int open_partitions(struct txn_log *tl, const struct txn_log_options *opts, int32_t num_partitions,
                           int32_t segment_bytes, char *err, size_t errlen)
{
    const struct metadata_image *img = metadata_image_acquire(opts->metadata);
    const struct metadata_topic *topic = metadata_image_topic_by_name(img, TXN_LOG_TOPIC, strlen(TXN_LOG_TOPIC));
    if (!topic || topic->partition_count <= 0) {
        metadata_image_release(img);
        snprintf(err, errlen, "%s is missing from the metadata image or has no partitions", TXN_LOG_TOPIC);
        return -1;
    }
    if (topic->partition_count != num_partitions)
        logger_warn("txn",
                    "%s has %d partitions; transaction.state.log.num.partitions=%d applies only when it is created",
                    TXN_LOG_TOPIC, (int)topic->partition_count, (int)num_partitions);
    tl->partition_count = topic->partition_count;
    tl->partitions = calloc((size_t)tl->partition_count, sizeof *tl->partitions);
    tl->replicated_here = calloc((size_t)tl->partition_count, sizeof *tl->replicated_here);
    if (!tl->partitions || !tl->replicated_here) {
        metadata_image_release(img);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    struct log_config cfg;
    log_config_defaults(&cfg);
    cfg.segment_bytes = segment_bytes;
    cfg.retention_ms = -1;
    for (int32_t p = 0; p < tl->partition_count; p++) {
        struct partition_log *log = log_manager_get(opts->logs, TXN_LOG_TOPIC, p);
        bool here = log != NULL;
        const struct metadata_partition *part = metadata_topic_partition(topic, p);
        for (int32_t r = 0; part && part->present && r < part->replica_count; r++)
            here |= part->replicas[r] == opts->node_id;
        if (!log && here) {
            char why[256] = "";
            if (log_manager_create(opts->logs, TXN_LOG_TOPIC, p, topic->topic_id.bytes, &cfg, &log, why,
                                   sizeof why) != KAFKA_ERR_NONE) {
                logger_error("txn", "cannot create the log of %s-%d: %s", TXN_LOG_TOPIC, (int)p, why);
                log = NULL;
            }
        }
        tl->partitions[p] = log;
        tl->replicated_here[p] = here;
    }
    metadata_image_release(img);
    return 0;
}

int txn_log_open(const struct txn_log_options *opts, struct txn_log **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!opts || !opts->logs || !opts->metadata) {
        snprintf(err, errlen, "the transaction log needs a log manager and a metadata store");
        return -1;
    }
    int32_t num_partitions = opts->num_partitions > 0 ? opts->num_partitions : DEFAULT_NUM_PARTITIONS;
    int32_t segment_bytes = opts->segment_bytes > 0 ? opts->segment_bytes : DEFAULT_SEGMENT_BYTES;
    struct txn_log *tl = calloc(1, sizeof *tl);
    if (!tl) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    tl->load_buffer_size = (size_t)(opts->load_buffer_size > 0 ? opts->load_buffer_size : DEFAULT_LOAD_BUFFER_SIZE);
    if (ensure_topic(opts, num_partitions, segment_bytes, err, errlen) != 0 ||
        open_partitions(tl, opts, num_partitions, segment_bytes, err, errlen) != 0) {
        txn_log_close(tl);
        return -1;
    }
    *out = tl;
    return 0;
}

void txn_log_close(struct txn_log *tl)
{
    if (!tl)
        return;
    for (int32_t p = 0; tl->partitions && p < tl->partition_count; p++)
        if (tl->partitions[p])
            partition_log_close(tl->partitions[p]);
    free(tl->partitions);
    free(tl->replicated_here);
    free(tl);
}

int32_t txn_log_partition_count(const struct txn_log *tl)
{
    return tl ? tl->partition_count : 0;
}

static int16_t log_for_id(struct txn_log *tl, const char *id, struct partition_log **out)
{
    *out = NULL;
    if (!tl || !id || tl->partition_count <= 0)
        return KAFKA_ERR_COORDINATOR_NOT_AVAILABLE;
    int32_t p = coordinator_partition_for(id, strlen(id), tl->partition_count);
    if (!tl->replicated_here[p])
        return KAFKA_ERR_NOT_COORDINATOR;
    if (!tl->partitions[p] || partition_log_is_offline(tl->partitions[p]))
        return KAFKA_ERR_COORDINATOR_NOT_AVAILABLE;
    *out = tl->partitions[p];
    return KAFKA_ERR_NONE;
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
    struct transaction_log_value_partitions_schema *topics =
        kafka_arena_alloc(arena, rec->partition_count * sizeof *topics);
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
    int32_t epoch = partition_log_latest_epoch(log);
    struct log_append_result res;
    memset(&res, 0, sizeof res);
    code = partition_log_append(log, batch, len, epoch < 0 ? 0 : epoch, &res);
    free(batch);
    if (code != KAFKA_ERR_NONE) {
        logger_warn("txn", "cannot write transactional id %s to %s: error %d %s", transactional_id,
                    partition_log_dir(log), (int)code, res.error_message);
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    }
    code = partition_log_flush(log);
    if (code != KAFKA_ERR_NONE) {
        logger_error("txn", "cannot flush transactional id %s in %s: error %d", transactional_id,
                     partition_log_dir(log), (int)code);
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    }
    return KAFKA_ERR_NONE;
}
