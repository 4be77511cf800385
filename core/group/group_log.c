/* The group log: opening __consumer_offsets (through internal_topic.c) and
 * the store operations. Replay lives in group_log_load.c, record layouts in
 * group_log_codec.c. */
#include "group/group_log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group/group_log_codec.h"
#include "group/group_log_internal.h"
#include "coordinator/coordinator_partition.h"
#include "coordinator/internal_topic.h"
#include "log/partition_log.h"
#include "protocol/generated/errors.h"
#include "protocol/record_batch.h"
#include "util/clock.h"
#include "util/logger.h"

#define DEFAULT_LOAD_BUFFER_SIZE 5242880
#define DEFAULT_COMMIT_TIMEOUT_MS 5000

int group_log_open(const struct group_log_options *opts, struct group_log **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!opts || !opts->logs || !opts->metadata) {
        snprintf(err, errlen, "the group log needs a log manager and a metadata store");
        return -1;
    }
    struct group_log *gl = calloc(1, sizeof *gl);
    if (!gl) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    gl->load_buffer_size = (size_t)(opts->load_buffer_size > 0 ? opts->load_buffer_size : DEFAULT_LOAD_BUFFER_SIZE);
    gl->commit_timeout_ms = opts->commit_timeout_ms > 0 ? opts->commit_timeout_ms : DEFAULT_COMMIT_TIMEOUT_MS;
    const struct internal_topic_options topic = {
        .name = GROUP_LOG_TOPIC,
        .component = "group",
        .config_prefix = "offsets.topic",
        .logs = opts->logs,
        .metadata = opts->metadata,
        .num_partitions = opts->num_partitions,
        .replication_factor = opts->replication_factor,
        .segment_bytes = opts->segment_bytes,
        .node_id = opts->node_id,
        .fetch_purgatory = opts->fetch_purgatory,
        .expected_brokers = opts->expected_brokers,
    };
    if (internal_topic_open(&topic, &gl->topic, err, errlen) != 0) {
        free(gl);
        return -1;
    }
    *out = gl;
    return 0;
}

void group_log_close(struct group_log *gl)
{
    if (!gl)
        return;
    internal_topic_close(gl->topic);
    free(gl);
}

int32_t group_log_partition_count(const struct group_log *gl)
{
    return gl ? internal_topic_partition_count(gl->topic) : 0;
}

/* The log of the group's partition, or the error to answer with. */
static int16_t log_for_group(struct group_log *gl, const char *group_id, struct partition_log **out)
{
    return internal_topic_log_for_key(gl ? gl->topic : NULL, group_id, out);
}

/* Kafka's translation of append errors for the group coordinator. */
static int16_t client_error_for(int16_t append_code, bool offsets)
{
    switch (append_code) {
    case KAFKA_ERR_NONE:
        return KAFKA_ERR_NONE;
    case KAFKA_ERR_MESSAGE_TOO_LARGE:
    case KAFKA_ERR_RECORD_LIST_TOO_LARGE:
        return offsets ? KAFKA_ERR_INVALID_COMMIT_OFFSET_SIZE : KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    case KAFKA_ERR_INVALID_PRODUCER_EPOCH: /* a fenced transactional producer */
        return append_code;
    default:
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    }
}

/* Builds one batch: key/value pairs are added by the caller through it. */
struct batch_writer {
    struct record_batch_builder builder;
    struct kafka_writer key;
    struct kafka_writer value;
    int64_t now_ms;
    bool failed;
};

static int batch_writer_init(struct batch_writer *bw)
{
    memset(bw, 0, sizeof *bw);
    bw->now_ms = clock_wall_ms();
    record_batch_builder_init(&bw->builder, bw->now_ms);
    if (kafka_writer_init(&bw->key, 128) != 0 || kafka_writer_init(&bw->value, 256) != 0) {
        kafka_writer_free(&bw->key);
        record_batch_builder_free(&bw->builder);
        return -1;
    }
    return 0;
}

static void batch_writer_free(struct batch_writer *bw)
{
    kafka_writer_free(&bw->key);
    kafka_writer_free(&bw->value);
    record_batch_builder_free(&bw->builder);
}

/* Adds the record whose key and value (has_value false: tombstone) the
 * writers now hold, and empties them. */
static void batch_writer_add(struct batch_writer *bw, int encode_rc, bool has_value)
{
    if (bw->failed || encode_rc != 0 || bw->key.failed || bw->value.failed || bw->key.len > INT32_MAX ||
        bw->value.len > INT32_MAX) {
        bw->failed = true;
        return;
    }
    if (record_batch_builder_add(&bw->builder, bw->now_ms, bw->key.buf, (int32_t)bw->key.len,
                                 has_value ? bw->value.buf : NULL, has_value ? (int32_t)bw->value.len : -1, NULL,
                                 0) != 0)
        bw->failed = true;
    bw->key.len = 0;
    bw->value.len = 0;
}

static void add_offset(struct batch_writer *bw, const char *group_id, const struct group_offset_record *o,
                       bool tombstone)
{
    int rc = group_log_encode_offset_key(&bw->key, group_id, o->topic, o->partition);
    if (rc == 0 && !tombstone)
        rc = group_log_encode_offset_value(&bw->value, o);
    batch_writer_add(bw, rc, !tombstone);
}

/* Appends the batch to the group's partition and makes it durable, or with
 * a sync_point only says what to make durable (group_log_sync). */
static int16_t batch_writer_commit(struct batch_writer *bw, struct group_log *gl, const char *group_id, bool offsets,
                                   const char *what, struct group_sync_point *sync_point)
{
    struct partition_log *log;
    int16_t code = log_for_group(gl, group_id, &log);
    if (code != KAFKA_ERR_NONE)
        return code;
    uint8_t *batch = NULL;
    size_t len = 0;
    if (bw->failed || record_batch_builder_finish(&bw->builder, &batch, &len) != 0) {
        logger_warn("group", "cannot encode %s of group %s", what, group_id);
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    }
    char about[256];
    snprintf(about, sizeof about, "%s of group %s", what, group_id);
    int64_t end_offset = -1;
    /* internal_topic_append writes at the latest epoch too. */
    int32_t epoch = partition_log_latest_epoch(log);
    if (sync_point)
        sync_point->leader_epoch = epoch < 0 ? 0 : epoch;
    code = internal_topic_append(gl->topic, log, batch, len, true,
                                 sync_point ? INTERNAL_TOPIC_FLUSH_NONE : INTERNAL_TOPIC_FLUSH_ALL, &end_offset, about);
    if (sync_point)
        sync_point->end_offset = end_offset;
    free(batch);
    if (code == KAFKA_ERR_NONE && sync_point)
        sync_point->partition = coordinator_partition_for(group_id, strlen(group_id), group_log_partition_count(gl));
    /* A flush failure (a storage error) maps to UNKNOWN_SERVER_ERROR too. */
    return client_error_for(code, offsets);
}

static int16_t write_offsets(struct group_log *gl, const char *group_id, const struct group_offset_record *offsets,
                             size_t count, bool tombstones, bool group_tombstone, const char *what,
                             struct group_sync_point *sync_point)
{
    struct partition_log *log;
    int16_t code = log_for_group(gl, group_id, &log);
    if (code != KAFKA_ERR_NONE)
        return code;
    if (count == 0 && !group_tombstone)
        return KAFKA_ERR_NONE;
    if (count > 0 && !offsets)
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    struct batch_writer bw;
    if (batch_writer_init(&bw) != 0)
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    for (size_t i = 0; i < count && !bw.failed; i++)
        add_offset(&bw, group_id, &offsets[i], tombstones);
    if (group_tombstone)
        batch_writer_add(&bw, group_log_encode_group_key(&bw.key, group_id), false);
    code = batch_writer_commit(&bw, gl, group_id, !group_tombstone, what, sync_point);
    batch_writer_free(&bw);
    return code;
}

static int16_t store_offsets(void *store, const char *group_id, const struct group_offset_record *offsets, size_t count)
{
    return write_offsets(store, group_id, offsets, count, false, false, "offsets", NULL);
}

static int16_t append_offsets(void *store, const char *group_id, const struct group_offset_record *offsets,
                              size_t count, struct group_sync_point *sync_point)
{
    *sync_point = (struct group_sync_point){.partition = -1, .end_offset = -1};
    return write_offsets(store, group_id, offsets, count, false, false, "offsets", sync_point);
}

static int16_t delete_offsets(void *store, const char *group_id, const struct group_offset_record *offsets,
                              size_t count)
{
    return write_offsets(store, group_id, offsets, count, true, false, "offset deletions", NULL);
}

static int16_t delete_group(void *store, const char *group_id, const struct group_offset_record *offsets, size_t count)
{
    return write_offsets(store, group_id, offsets, count, true, true, "the deletion", NULL);
}

static int16_t write_txn_offsets(void *store, const char *group_id, int64_t producer_id, int16_t producer_epoch,
                                 const struct group_offset_record *offsets, size_t count,
                                 struct group_sync_point *sync_point)
{
    struct partition_log *log;
    int16_t code = log_for_group(store, group_id, &log);
    if (code != KAFKA_ERR_NONE)
        return code;
    if (count == 0)
        return KAFKA_ERR_NONE;
    if (!offsets || producer_id < 0 || producer_epoch < 0)
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    struct batch_writer bw;
    if (batch_writer_init(&bw) != 0)
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    /* Kafka's layout for these: the producer's id and epoch, the
     * transactional flag, and no sequence (the coordinator writes them). */
    bw.builder.attributes |= RECORD_BATCH_TRANSACTIONAL_BIT;
    bw.builder.producer_id = producer_id;
    bw.builder.producer_epoch = producer_epoch;
    bw.builder.base_sequence = -1;
    for (size_t i = 0; i < count && !bw.failed; i++)
        add_offset(&bw, group_id, &offsets[i], false);
    code = batch_writer_commit(&bw, store, group_id, true, "transactional offsets", sync_point);
    batch_writer_free(&bw);
    return code;
}

static int16_t store_txn_offsets(void *store, const char *group_id, int64_t producer_id, int16_t producer_epoch,
                                 const struct group_offset_record *offsets, size_t count)
{
    return write_txn_offsets(store, group_id, producer_id, producer_epoch, offsets, count, NULL);
}

static int16_t append_txn_offsets(void *store, const char *group_id, int64_t producer_id, int16_t producer_epoch,
                                  const struct group_offset_record *offsets, size_t count,
                                  struct group_sync_point *sync_point)
{
    *sync_point = (struct group_sync_point){.partition = -1, .end_offset = -1};
    return write_txn_offsets(store, group_id, producer_id, producer_epoch, offsets, count, sync_point);
}

/* The partition logs stay open for the group log's lifetime, so this needs
 * no lock of the coordinator's. */
static int16_t sync_appended(void *store, const struct group_sync_point *sync_point)
{
    struct group_log *gl = store;
    if (!sync_point || sync_point->partition < 0)
        return KAFKA_ERR_NONE; /* nothing was appended */
    struct partition_log *log = gl ? internal_topic_partition_log(gl->topic, sync_point->partition) : NULL;
    if (!log)
        return KAFKA_ERR_COORDINATOR_NOT_AVAILABLE;
    int16_t code = partition_log_flush_to(log, sync_point->end_offset);
    if (code != KAFKA_ERR_NONE) {
        logger_error("group", "cannot flush group records in %s: error %d", partition_log_dir(log), (int)code);
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    }
    /* Answered only once the followers have it: a commit only this node
     * held would be lost with its leadership, and a consumer (or a
     * transaction's consumed offsets) would start again from older ones. */
    code = partition_log_wait_replicated(log, sync_point->leader_epoch, sync_point->end_offset, gl->commit_timeout_ms);
    switch (code) {
    case KAFKA_ERR_NONE:
        return KAFKA_ERR_NONE;
    /* Kafka's mapping for a commit's append. */
    case KAFKA_ERR_NOT_LEADER_OR_FOLLOWER:
    case KAFKA_ERR_KAFKA_STORAGE_ERROR:
        logger_warn("group", "group records in %s up to %" PRId64 " were cut by a change of leader",
                    partition_log_dir(log), sync_point->end_offset);
        return KAFKA_ERR_NOT_COORDINATOR;
    default:
        logger_warn("group",
                    "group records in %s up to %" PRId64 " not replicated within offsets.commit.timeout.ms (%" PRId64
                    " ms)",
                    partition_log_dir(log), sync_point->end_offset, gl->commit_timeout_ms);
        return KAFKA_ERR_COORDINATOR_NOT_AVAILABLE;
    }
}

static int16_t write_group(void *store, const struct group_snapshot_record *group, struct group_sync_point *sync_point)
{
    if (!group || !group->group_id)
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    struct partition_log *log;
    int16_t code = log_for_group(store, group->group_id, &log);
    if (code != KAFKA_ERR_NONE)
        return code;
    struct batch_writer bw;
    if (batch_writer_init(&bw) != 0)
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    int rc = group_log_encode_group_key(&bw.key, group->group_id);
    if (rc == 0)
        rc = group_log_encode_group_value(&bw.value, group);
    batch_writer_add(&bw, rc, true);
    code = batch_writer_commit(&bw, store, group->group_id, false, "the metadata", sync_point);
    batch_writer_free(&bw);
    return code;
}

static int16_t store_group(void *store, const struct group_snapshot_record *group)
{
    return write_group(store, group, NULL);
}

static int16_t append_group(void *store, const struct group_snapshot_record *group, struct group_sync_point *sync_point)
{
    *sync_point = (struct group_sync_point){.partition = -1, .end_offset = -1};
    return write_group(store, group, sync_point);
}

static int load_partition(void *store, int32_t partition, const struct group_load_visitor *visitor, void *ctx,
                          char *err, size_t errlen)
{
    return group_log_load_partition(store, partition, visitor, ctx, err, errlen);
}

static const struct group_store_ops group_log_ops = {
    .store_offsets = store_offsets,
    .store_group = store_group,
    .delete_group = delete_group,
    .delete_offsets = delete_offsets,
    .store_txn_offsets = store_txn_offsets,
    .append_offsets = append_offsets,
    .append_txn_offsets = append_txn_offsets,
    .append_group = append_group,
    .sync = sync_appended,
    .load_partition = load_partition,
};

const struct group_store_ops *group_log_store_ops(void)
{
    return &group_log_ops;
}
