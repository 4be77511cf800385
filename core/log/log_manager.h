/* All partition logs of a broker, spread over one or more log.dirs.
 *
 * Each log dir holds <topic>-<partition>/ directories plus Kafka's
 * recovery-point-offset-checkpoint, log-start-offset-checkpoint and
 * replication-offset-checkpoint (high watermarks, loaded back at open) files and,
 * after a clean shutdown, the .kafka_cleanshutdown marker (present at open:
 * no recovery scan; removed at open, written by a clean close).
 *
 * Thread-safety: every function may be called from any thread. An internal
 * mutex guards the partition table; partition logs are reference counted, so
 * a log returned by get/create stays valid until the caller releases it with
 * partition_log_close(), even if it is deleted meanwhile. An optional
 * background thread runs time-based rolls, flush.ms, retention and
 * checkpoints. */
#ifndef CAIRN_LOG_LOG_MANAGER_H
#define CAIRN_LOG_LOG_MANAGER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log/log_cleaner.h"
#include "log/log_config.h"
#include "log/partition_log.h"

struct log_manager;

/* The cluster metadata log and its directory: the manager never loads or
 * creates a partition log there. */
#define LOG_MANAGER_METADATA_TOPIC "__cluster_metadata"
#define LOG_MANAGER_METADATA_DIR LOG_MANAGER_METADATA_TOPIC "-0"

struct log_manager_config {
    int64_t retention_check_interval_ms;               /* log.retention.check.interval.ms */
    int64_t flush_scheduler_interval_ms;               /* log.flush.scheduler.interval.ms */
    int64_t flush_offset_checkpoint_interval_ms;       /* log.flush.offset.checkpoint.interval.ms */
    int64_t flush_start_offset_checkpoint_interval_ms; /* log.flush.start.offset.checkpoint.interval.ms */
    int64_t roll_check_interval_ms;                    /* how often segment.ms is checked */
    int64_t high_watermark_checkpoint_interval_ms;     /* replica.high.watermark.checkpoint.interval.ms */
    int64_t producer_expiration_check_interval_ms;     /* producer.id.expiration.check.interval.ms */
    bool background_thread;                            /* false: caller drives log_manager_maintain */
    int32_t recovery_threads_per_data_dir;             /* num.recovery.threads.per.data.dir (>= 1) */
    struct log_cleaner_config cleaner;                 /* log.cleaner.*; its threads run when enabled
                                                 * and background_thread is set */
};

void log_manager_config_defaults(struct log_manager_config *cfg);

/* Open (creating missing dirs) and load every partition found, opening the
 * partitions of each dir with cfg->recovery_threads_per_data_dir threads
 * (clean or unclean start alike; all are joined before the next dir).
 * Partitions that fail to open are logged, in directory order, and left out.
 * Returns 0 or -1 with err. */
int log_manager_open(const char *const *dirs, size_t dir_count, const struct log_config *defaults,
                     const struct log_manager_config *cfg, struct log_manager **out, char *err, size_t errlen);

/* A new reference to the partition's log (release with partition_log_close),
 * or NULL when this broker has no log for it. */
struct partition_log *log_manager_get(struct log_manager *m, const char *topic, int32_t partition);

/* Create the log (or return the existing one, writing topic_id to its
 * partition.metadata when it has none) in the log dir holding the fewest
 * partitions. topic_id may be NULL; cfg NULL means the defaults.
 * Returns KAFKA_ERR_NONE with a new reference in *out (may be NULL if not
 * wanted), or a Kafka error with err. */
int16_t log_manager_create(struct log_manager *m, const char *topic, int32_t partition, const uint8_t *topic_id,
                           const struct log_config *cfg, struct partition_log **out, char *err, size_t errlen);

/* Remove the partition and its directory (when the last reference goes).
 * Returns 0, or -1 when unknown. */
int log_manager_delete(struct log_manager *m, const char *topic, int32_t partition);

size_t log_manager_partition_count(struct log_manager *m);

/* One maintenance pass as the background thread runs it; force=true runs
 * every task regardless of its interval (tests, shutdown). */
void log_manager_maintain(struct log_manager *m, int64_t now_ms, bool force);

/* One log cleaner pass over the compacted logs, on the caller's thread;
 * force ignores min.cleanable.dirty.ratio. Returns the number of logs cleaned. */
int log_manager_clean(struct log_manager *m, int64_t now_ms, bool force);
/* The manager's cleaner (checkpointed first dirty offsets). */
struct log_cleaner *log_manager_cleaner(struct log_manager *m);

/* A reference to every log with where it lives, for work done outside the
 * manager's lock. */
struct log_manager_partition {
    char *topic;
    int32_t partition;
    size_t dir_index;
    struct partition_log *log;
};
/* Returns 0 or ENOMEM; free with log_manager_list_free. */
int log_manager_list(struct log_manager *m, struct log_manager_partition **out, size_t *n);
void log_manager_list_free(struct log_manager_partition *parts, size_t n);
/* partition_log_cancel_replication_waits on every log held now. */
void log_manager_cancel_replication_waits(struct log_manager *m);
size_t log_manager_dir_count(const struct log_manager *m);
const char *log_manager_dir_path(const struct log_manager *m, size_t dir_index);

/* Write the three offset checkpoints in every log dir. Returns 0 or an errno. */
int log_manager_write_checkpoints(struct log_manager *m);
/* Write log-start-offset-checkpoint in every log dir now (DeleteRecords:
 * a moved start offset must survive a crash). Returns 0 or an errno. */
int log_manager_write_start_offsets(struct log_manager *m);

/* Stop the thread and close every log. clean=true flushes, writes the
 * checkpoints and the clean-shutdown markers. */
void log_manager_close(struct log_manager *m, bool clean);

#endif
