/* The group log: opening __consumer_offsets and the store operations.
 * Replay lives in group_log_load.c, record layouts in group_log_codec.c.
 *
 * __consumer_offsets is created with cleanup.policy=compact. The partition
 * log does not compact yet, so the topic grows until compaction exists; to
 * keep retention from dropping live offsets meanwhile (the log applies
 * retention.ms whatever the policy), the topic also gets retention.ms=-1,
 * which Kafka ignores for a compact-only topic anyway. */
#include "group/group_log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group/coordinator_partition.h"
#include "group/group_log_codec.h"
#include "group/group_log_internal.h"
#include "log/log_manager.h"
#include "log/partition_log.h"
#include "metadata/metadata_store.h"
#include "protocol/generated/errors.h"
#include "protocol/record_batch.h"
#include "util/clock.h"
#include "util/logger.h"

#define DEFAULT_NUM_PARTITIONS 50
#define DEFAULT_REPLICATION_FACTOR 3
#define DEFAULT_SEGMENT_BYTES 104857600
#define DEFAULT_LOAD_BUFFER_SIZE 5242880

/* Creates the topic when the image lacks it. Returns 0 or -1 with err. */
static int ensure_topic(const struct group_log_options *opts, int32_t num_partitions, int32_t segment_bytes,
                        char *err, size_t errlen)
{
    const struct metadata_image *img = metadata_image_acquire(opts->metadata);
    bool exists = metadata_image_topic_by_name(img, GROUP_LOG_TOPIC, strlen(GROUP_LOG_TOPIC)) != NULL;
    int32_t live = metadata_image_live_broker_count(img);
    metadata_image_release(img);
    if (exists)
        return 0;
    if (live < 1) {
        snprintf(err, errlen, "no live broker to place %s on", GROUP_LOG_TOPIC);
        return -1;
    }
    int16_t rf = opts->replication_factor > 0 ? opts->replication_factor : DEFAULT_REPLICATION_FACTOR;
    if (rf > live) {
        /* Kafka would wait for more brokers; a small cluster should work out of the box. */
        logger_info("group",
                    "offsets.topic.replication.factor is %d but %d broker(s) are live: creating %s with "
                    "replication factor %d",
                    (int)rf, (int)live, GROUP_LOG_TOPIC, (int)live);
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
    int16_t rc = metadata_create_topic(opts->metadata, GROUP_LOG_TOPIC, num_partitions, rf, NULL, 0, configs,
                                       (int32_t)(sizeof configs / sizeof configs[0]), false, NULL, why, sizeof why);
    if (rc == KAFKA_ERR_TOPIC_ALREADY_EXISTS)
        return 0; /* created meanwhile by another caller */
    if (rc != KAFKA_ERR_NONE) {
        snprintf(err, errlen, "cannot create %s: %s (error %d)", GROUP_LOG_TOPIC, why, (int)rc);
        return -1;
    }
    logger_info("group", "created %s with %d partitions, replication factor %d", GROUP_LOG_TOPIC,
                (int)num_partitions, (int)rf);
    return 0;
}

/* Takes a reference to each partition log held here, creating the logs the
 * broker has not created yet. */
static int open_partitions(struct group_log *gl, const struct group_log_options *opts, int32_t num_partitions,
                           int32_t segment_bytes, char *err, size_t errlen)
{
    const struct metadata_image *img = metadata_image_acquire(opts->metadata);
    const struct metadata_topic *topic = metadata_image_topic_by_name(img, GROUP_LOG_TOPIC, strlen(GROUP_LOG_TOPIC));
    if (!topic || topic->partition_count <= 0) {
        metadata_image_release(img);
        snprintf(err, errlen, "%s is missing from the metadata image or has no partitions", GROUP_LOG_TOPIC);
        return -1;
    }
    if (topic->partition_count != num_partitions)
        logger_warn("group",
                    "%s has %d partitions; offsets.topic.num.partitions=%d applies only when it is created",
                    GROUP_LOG_TOPIC, (int)topic->partition_count, (int)num_partitions);
    gl->partition_count = topic->partition_count;
    gl->partitions = calloc((size_t)gl->partition_count, sizeof *gl->partitions);
    gl->replicated_here = calloc((size_t)gl->partition_count, sizeof *gl->replicated_here);
    if (!gl->partitions || !gl->replicated_here) {
        metadata_image_release(img);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    struct log_config cfg;
    log_config_defaults(&cfg);
    cfg.segment_bytes = segment_bytes;
    cfg.retention_ms = -1;
    for (int32_t p = 0; p < gl->partition_count; p++) {
        struct partition_log *log = log_manager_get(opts->logs, GROUP_LOG_TOPIC, p);
        bool here = log != NULL;
        const struct metadata_partition *part = metadata_topic_partition(topic, p);
        for (int32_t r = 0; part && part->present && r < part->replica_count; r++)
            here |= part->replicas[r] == opts->node_id;
        if (!log && here) {
            char why[256] = "";
            if (log_manager_create(opts->logs, GROUP_LOG_TOPIC, p, topic->topic_id.bytes, &cfg, &log, why,
                                   sizeof why) != KAFKA_ERR_NONE) {
                logger_error("group", "cannot create the log of %s-%d: %s", GROUP_LOG_TOPIC, (int)p, why);
                log = NULL;
            }
        }
        gl->partitions[p] = log;
        gl->replicated_here[p] = here;
    }
    metadata_image_release(img);
    return 0;
}

int group_log_open(const struct group_log_options *opts, struct group_log **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!opts || !opts->logs || !opts->metadata) {
        snprintf(err, errlen, "the group log needs a log manager and a metadata store");
        return -1;
    }
    int32_t num_partitions = opts->num_partitions > 0 ? opts->num_partitions : DEFAULT_NUM_PARTITIONS;
    int32_t segment_bytes = opts->segment_bytes > 0 ? opts->segment_bytes : DEFAULT_SEGMENT_BYTES;
    struct group_log *gl = calloc(1, sizeof *gl);
    if (!gl) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    gl->load_buffer_size = (size_t)(opts->load_buffer_size > 0 ? opts->load_buffer_size : DEFAULT_LOAD_BUFFER_SIZE);
    if (ensure_topic(opts, num_partitions, segment_bytes, err, errlen) != 0 ||
        open_partitions(gl, opts, num_partitions, segment_bytes, err, errlen) != 0) {
        group_log_close(gl);
        return -1;
    }
    *out = gl;
    return 0;
}

void group_log_close(struct group_log *gl)
{
    if (!gl)
        return;
    for (int32_t p = 0; gl->partitions && p < gl->partition_count; p++)
        if (gl->partitions[p])
            partition_log_close(gl->partitions[p]);
    free(gl->partitions);
    free(gl->replicated_here);
    free(gl);
}

int32_t group_log_partition_count(const struct group_log *gl)
{
    return gl ? gl->partition_count : 0;
}

/* The log of the group's partition, or the error to answer with. */
static int16_t log_for_group(struct group_log *gl, const char *group_id, struct partition_log **out)
{
    *out = NULL;
    if (!gl || !group_id || gl->partition_count <= 0)
        return KAFKA_ERR_COORDINATOR_NOT_AVAILABLE;
    int32_t p = coordinator_partition_for(group_id, strlen(group_id), gl->partition_count);
    if (!gl->replicated_here[p])
        return KAFKA_ERR_NOT_COORDINATOR;
    if (!gl->partitions[p] || partition_log_is_offline(gl->partitions[p]))
        return KAFKA_ERR_COORDINATOR_NOT_AVAILABLE;
    *out = gl->partitions[p];
    return KAFKA_ERR_NONE;
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
static int16_t batch_writer_commit(struct batch_writer *bw, struct group_log *gl, const char *group_id,
                                   bool offsets, const char *what, struct group_sync_point *sync_point)
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
    int32_t epoch = partition_log_latest_epoch(log);
    struct log_append_result res;
    memset(&res, 0, sizeof res);
    code = partition_log_append_coordinator(log, batch, len, epoch < 0 ? 0 : epoch, &res);
    free(batch);
    if (code != KAFKA_ERR_NONE) {
        logger_warn("group", "cannot write %s of group %s to %s: error %d %s", what, group_id,
                    partition_log_dir(log), (int)code, res.error_message);
        return client_error_for(code, offsets);
    }
    if (sync_point) {
        sync_point->partition = coordinator_partition_for(group_id, strlen(group_id), gl->partition_count);
        sync_point->end_offset = res.last_offset + 1;
        return KAFKA_ERR_NONE;
    }
    code = partition_log_flush(log);
    if (code != KAFKA_ERR_NONE) {
        logger_error("group", "cannot flush %s of group %s in %s: error %d", what, group_id, partition_log_dir(log),
                     (int)code);
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    }
    return KAFKA_ERR_NONE;
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

static int16_t store_offsets(void *store, const char *group_id, const struct group_offset_record *offsets,
                             size_t count)
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

static int16_t delete_group(void *store, const char *group_id, const struct group_offset_record *offsets,
                            size_t count)
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
    if (!gl || sync_point->partition >= gl->partition_count || !gl->partitions[sync_point->partition])
        return KAFKA_ERR_COORDINATOR_NOT_AVAILABLE;
    struct partition_log *log = gl->partitions[sync_point->partition];
    int16_t code = partition_log_flush_to(log, sync_point->end_offset);
    if (code != KAFKA_ERR_NONE) {
        logger_error("group", "cannot flush offsets in %s: error %d", partition_log_dir(log), (int)code);
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    }
    return KAFKA_ERR_NONE;
}

static int16_t store_group(void *store, const struct group_snapshot_record *group)
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
    code = batch_writer_commit(&bw, store, group->group_id, false, "the metadata", NULL);
    batch_writer_free(&bw);
    return code;
}

static const struct group_store_ops group_log_ops = {
    .store_offsets = store_offsets,
    .store_group = store_group,
    .delete_group = delete_group,
    .delete_offsets = delete_offsets,
    .store_txn_offsets = store_txn_offsets,
    .append_offsets = append_offsets,
    .append_txn_offsets = append_txn_offsets,
    .sync = sync_appended,
};

const struct group_store_ops *group_log_store_ops(void)
{
    return &group_log_ops;
}
