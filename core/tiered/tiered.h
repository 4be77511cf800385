/* Tiered storage (KIP-405): the remote log manager. Copies the closed
 * segments of topics with remote.storage.enable to the remote storage
 * plugin, keeps the list of remote segments durable, deletes remote
 * segments past retention.ms / retention.bytes or of deleted topics, and
 * serves fetches below the local log start from the remote store.
 *
 * Thread-safety: tiered_start and tiered_stop run on the main thread; the
 * other functions may be called from any thread. The manager runs its own
 * threads: one task thread (every remote.log.manager.task.interval.ms),
 * remote.log.manager.thread.pool.size copiers and remote.log.reader.threads
 * readers; it never blocks the caller of tiered_read. */
#ifndef CAIRN_TIERED_TIERED_H
#define CAIRN_TIERED_TIERED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log/log_manager.h"
#include "log/partition_log.h"

struct tiered;
struct plugin_host;

/* This broker's part in a partition, as the replica layer knows it. */
enum tiered_role {
    TIERED_ROLE_LEADER,   /* copies, deletes, and writes the partition's manifest to the store */
    TIERED_ROLE_FOLLOWER, /* reads the leader's manifest; never copies nor deletes */
    TIERED_ROLE_NONE,     /* not hosted here: left alone */
};

struct tiered_options {
    struct log_manager *logs;
    struct plugin_host *plugins;
    const char *state_dir; /* holds remote-log-metadata/ and remote-log-cache/ */
    int32_t node_id;
    int64_t task_interval_ms; /* remote.log.manager.task.interval.ms */
    /* remote.log.manager.task.retry.{backoff.ms,backoff.max.ms,jitter}:
     * how long remote work waits after the store failed as unavailable. */
    int64_t retry_backoff_ms;
    int64_t retry_backoff_max_ms;
    double retry_jitter;
    int32_t copier_threads;      /* remote.log.manager.thread.pool.size */
    int32_t reader_threads;      /* remote.log.reader.threads */
    int32_t read_ahead_segments; /* remote.log.read.ahead.segments (0: none) */
    int64_t cache_bytes;         /* remote.log.index.file.cache.total.size.bytes */
    int64_t chunk_bytes;         /* remote.log.chunk.size.bytes */
    /* KIP-956: remote.log.manager.{copy,fetch}.max.bytes.per.second (INT64_MAX:
     * unlimited) and their .quota.window.num / .quota.window.size.seconds. */
    int64_t copy_max_bytes_per_second;
    int32_t copy_quota_window_num;
    int32_t copy_quota_window_seconds;
    int64_t fetch_max_bytes_per_second;
    int32_t fetch_quota_window_num;
    int32_t fetch_quota_window_seconds;
    /* Whether a topic id (16 bytes) still names a topic: a partition's
     * remote segments are deleted once its topic is gone. */
    bool (*topic_exists)(void *ctx, const uint8_t topic_id[16]);
    /* This broker's role for topic-partition, with the leader epoch and
     * the replica count; NULL: leader of every partition, alone. */
    enum tiered_role (*role)(void *ctx, const char *topic, int32_t partition, int32_t *leader_epoch,
                             int32_t *replica_count);
    /* A remote read for the log keyed key landed: parked fetches retry. */
    void (*read_ready)(void *ctx, uintptr_t key);
    void *ctx;
};

/* Starts the manager: loads every partition's remote segment list, then
 * the threads. Returns 0, or -1 with err (no remote storage plugin loaded,
 * a metadata file that does not parse). */
int tiered_start(const struct tiered_options *opts, struct tiered **out, char *err, size_t errlen);
/* Stops the reader threads: read_ready is not called any more, and
 * tiered_read answers a read that misses the cache with an error. */
void tiered_stop_reads(struct tiered *t);
/* Stops the threads (a copy in progress finishes first) and frees. Accepts
 * NULL. */
void tiered_stop(struct tiered *t);

/* New copy and fetch quotas (bytes/s, INT64_MAX: unlimited), effective at
 * once: a copier waiting on the old copy quota re-reads it. Accepts NULL. */
void tiered_set_quotas(struct tiered *t, int64_t copy_max_bytes_per_second, int64_t fetch_max_bytes_per_second);

/* One pass of the task now, on the caller's thread (tests, shutdown). */
void tiered_run_once(struct tiered *t, int64_t now_ms);

enum tiered_read_status {
    TIERED_READ_LOCAL,   /* not a remote offset: read the local log */
    TIERED_READ_DONE,    /* *out holds the batches (len 0: none below max_offset) */
    TIERED_READ_PENDING, /* fetching from the remote store; read_ready(key) follows */
    TIERED_READ_ERROR,   /* the remote store failed or holds bad data: *kafka_error says how */
};

/* Batches from the one holding offset, up to max_bytes (at least one), none
 * at or past max_offset, from the remote segment holding offset, answered
 * as partition_log_read would answer from a local one. Never blocks. */
enum tiered_read_status tiered_read(struct tiered *t, struct partition_log *log, const char *topic, int32_t partition,
                                    int64_t offset, int32_t max_bytes, int64_t max_offset, uintptr_t key,
                                    struct log_read_result *out, int16_t *kafka_error);

/* ListOffsets by timestamp below the local log start: the first offset at
 * or after the log start whose record timestamp is >= ts, searched in the
 * remote segments; *offset -1 when none there (the local log answers).
 * May wait up to timeout_ms for a download (request threads only, never
 * io threads). Returns KAFKA_ERR_NONE, KAFKA_STORAGE_ERROR (the store
 * failed or holds bad data; retriable) or REQUEST_TIMED_OUT. */
int16_t tiered_offset_for_timestamp(struct tiered *t, struct partition_log *log, const char *topic, int32_t partition,
                                    int64_t ts, int64_t timeout_ms, int64_t *offset, int64_t *timestamp);

/* read_committed: the aborted transactions held in remote segments whose
 * marker is at or after fetch_offset and below before_offset (the local
 * log start: the local list has the rest) and whose first offset is below
 * upper_bound, in marker order. Calls fn for each; returns how many. */
size_t tiered_aborted_txns(struct tiered *t, const char *topic, int32_t partition, int64_t fetch_offset,
                           int64_t upper_bound, int64_t before_offset,
                           void (*fn)(void *arg, int64_t producer_id, int64_t first_offset), void *arg);

#endif
