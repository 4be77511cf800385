/* Per-partition log configuration, with Kafka's topic-config meanings and
 * defaults. A plain value struct: copied into each partition log at open,
 * so callers may reuse or free theirs. */
#ifndef CAIRN_LOG_LOG_CONFIG_H
#define CAIRN_LOG_LOG_CONFIG_H
#include <stdbool.h>
#include <stdint.h>

enum log_timestamp_type {
    LOG_TIMESTAMP_CREATE_TIME = 0,
    LOG_TIMESTAMP_LOG_APPEND_TIME = 1,
};

struct log_config {
    int64_t segment_bytes;                          /* segment.bytes: roll when the active segment would exceed it */
    int64_t segment_ms;                             /* segment.ms: roll when the active segment is this old */
    int64_t retention_ms;                           /* retention.ms, -1 = keep forever */
    int64_t retention_bytes;                        /* retention.bytes, -1 = no size limit */
    int64_t index_interval_bytes;                   /* index.interval.bytes: log bytes between index entries */
    int64_t segment_index_bytes;                    /* segment.index.bytes: roll when the offset index is this big */
    int64_t flush_messages;                         /* flush.messages: fdatasync after this many records */
    int64_t flush_ms;                               /* flush.ms: fdatasync when unflushed data is this old */
    int32_t max_message_bytes;                      /* max.message.bytes: largest batch accepted */
    enum log_timestamp_type message_timestamp_type; /* message.timestamp.type */
    /* message.timestamp.before.max.ms / after.max.ms, each falling back to
     * message.timestamp.difference.max.ms when left at its default, as Kafka
     * resolves them: how far a CreateTime timestamp may lie behind / ahead
     * of the broker clock. INT64_MAX: no limit. */
    int64_t message_timestamp_before_max_ms;
    int64_t message_timestamp_after_max_ms;
    bool preallocate;                  /* preallocate: reserve segment_bytes on roll */
    int64_t producer_id_expiration_ms; /* producer.id.expiration.ms: drop idle producer state */
    /* cleanup.policy: delete (retention.ms / retention.bytes apply) and/or
     * compact (the log cleaner keeps the latest record per key). */
    bool cleanup_delete;
    bool cleanup_compact;
    int64_t delete_retention_ms;      /* delete.retention.ms: how long tombstones survive cleaning */
    int64_t min_compaction_lag_ms;    /* min.compaction.lag.ms: records younger stay uncleaned */
    int64_t max_compaction_lag_ms;    /* max.compaction.lag.ms: dirty data older forces a clean */
    double min_cleanable_dirty_ratio; /* min.cleanable.dirty.ratio */
    /* Tiered storage (KIP-405). remote.storage.enable: closed segments are
     * copied to the remote store, and local retention deletes a segment
     * only once its copy is confirmed (partition_log_set_remote_offsets).
     * local.retention.ms / .bytes bound the local tail; -2 means "as
     * retention.ms / retention.bytes". */
    bool remote_storage_enable;
    int64_t local_retention_ms;
    int64_t local_retention_bytes;
};

void log_config_defaults(struct log_config *cfg);

#endif
