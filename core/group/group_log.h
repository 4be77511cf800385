/* The durable group store: committed offsets and group metadata as records
 * of the internal compacted topic __consumer_offsets, keyed and valued per
 * Kafka's group-coordinator schemas (OffsetCommitKey/Value,
 * GroupMetadataKey/Value), so Kafka tools can read the topic.
 *
 * A group lives in partition coordinator_partition_for(group_id,
 * offsets.topic.num.partitions). Writes go through the partition log's
 * normal append and are fsync'd per the topic's flush settings before the
 * call returns.
 *
 * Thread-safety: after group_log_open, the store ops and group_log_load may
 * be called from any thread; writes to one partition are serialised by the
 * partition log. group_log_close runs once, after the last call. */
#ifndef CAIRN_GROUP_GROUP_LOG_H
#define CAIRN_GROUP_GROUP_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "group/group_persistence.h"

#define GROUP_LOG_TOPIC "__consumer_offsets"

struct log_manager;
struct metadata_store;
struct group_log;

struct purgatory;

struct group_log_options {
    struct log_manager *logs;
    struct metadata_store *metadata;
    int32_t num_partitions;     /* offsets.topic.num.partitions, default 50 */
    int16_t replication_factor; /* offsets.topic.replication.factor (capped by live brokers) */
    int32_t segment_bytes;      /* offsets.topic.segment.bytes, default 104857600 */
    /* node.id: a partition replicated here whose log the broker has not
     * created yet is created by group_log_open. */
    int32_t node_id;
    int32_t load_buffer_size; /* offsets.load.buffer.size; <= 0 means 5242880 */
    struct purgatory *fetch_purgatory; /* woken on each append (followers' parked fetches); may be NULL */
    int32_t expected_brokers; /* internal_topic_options.expected_brokers */
    /* offsets.commit.timeout.ms: how long a commit waits for the ISR
     * (sync); <= 0 means 5000 */
    int32_t commit_timeout_ms;
};

/* Creates __consumer_offsets on first start (cleanup.policy=compact) and
 * opens its partitions. On failure -1 with the reason in err. */
int group_log_open(const struct group_log_options *opts, struct group_log **out, char *err, size_t errlen);

/* Replays every partition in offset order into the visitor (offsets and
 * group snapshots, tombstones as NULL). Corrupt or unknown records are
 * skipped with a warning. Returns 0, or -1 with err on an I/O failure.
 * An offset committed with null metadata loads with metadata "" (the value
 * schema has no null; Kafka answers OffsetFetch with "" for it too). */
int group_log_load(struct group_log *gl, const struct group_load_visitor *visitor, void *ctx, char *err, size_t errlen);
/* The same for one partition (partition < 0: every partition held here);
 * -1 with err also when the partition is not held here. */
int group_log_load_partition(struct group_log *gl, int32_t partition, const struct group_load_visitor *visitor,
                             void *ctx, char *err, size_t errlen);

/* The topic under the store, for the partitions held here. */
struct internal_topic;
struct internal_topic *group_log_topic(const struct group_log *gl);

/* The store ops; pass gl as their `store` argument. Each call appends one
 * batch (so a multi-partition commit is atomic on disk) and flushes it.
 * Errors: NOT_COORDINATOR when this broker holds no replica of the group's
 * partition, COORDINATOR_NOT_AVAILABLE when its log is missing or offline,
 * INVALID_COMMIT_OFFSET_SIZE for an offset batch over max.message.bytes,
 * UNKNOWN_SERVER_ERROR on I/O failures and unencodable input. */
const struct group_store_ops *group_log_store_ops(void);

int32_t group_log_partition_count(const struct group_log *gl);

void group_log_close(struct group_log *gl);

#endif
