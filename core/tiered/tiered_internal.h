/* The remote log manager's state, shared by the files of core/tiered. */
#ifndef CAIRN_TIERED_TIERED_INTERNAL_H
#define CAIRN_TIERED_TIERED_INTERNAL_H

#include <pthread.h>

#include "cairn/remote_storage.h"
#include "log/txn_index.h"
#include "metrics/metrics.h"
#include "tiered/tiered.h"
#include "tiered/tiered_quota.h"

#define TIERED_CUSTOM_METADATA_MAX 128 /* remote.log.metadata.custom.metadata.max.bytes */

/* Kafka's RemoteLogSegmentState, less COPY_SEGMENT_STARTED's siblings that
 * a single writer never needs. */
enum tiered_segment_state {
    TIERED_COPY_STARTED,   /* the plugin may hold part of it; never served */
    TIERED_COPY_FINISHED,  /* confirmed by the plugin: served, counts as copied */
    TIERED_DELETE_STARTED, /* being deleted: never served */
};

/* One remote segment (RemoteLogSegmentMetadata). */
struct tiered_segment {
    uint8_t id[16];
    int64_t start_offset;
    int64_t end_offset; /* inclusive */
    int64_t max_timestamp_ms;
    int64_t size_bytes;
    int64_t event_timestamp_ms;
    int32_t broker_id;
    int32_t *epochs;
    int64_t *epoch_starts;
    size_t epoch_count;
    uint8_t custom[TIERED_CUSTOM_METADATA_MAX];
    size_t custom_len;
    enum tiered_segment_state state;
    /* The segment's .txnindex (aborted transactions whose marker it holds),
     * kept here so read_committed reads need no extra remote round trip. */
    struct txn_index_entry *aborted;
    size_t aborted_count;
};

/* The remote segments of one partition incarnation (topic id). segs is
 * guarded by lock (ascending start offset); only the copier holding busy
 * (under the manager's lock) changes it, readers copy what they need. */
struct tiered_partition {
    char *topic;
    int32_t partition;
    uint8_t topic_id[16];
    char *meta_path;
    pthread_mutex_t lock;
    struct tiered_segment *segs;
    size_t count, cap;
    int64_t log_start_offset; /* lock: a DeleteRecords start below the local one, -1 when none */
    int64_t copy_lag;         /* manager lock: closed segments below the HW waiting for a copy */
    int64_t copy_lag_bytes;   /* manager lock: their bytes */
    bool busy;                /* manager lock: a copier works on it */
    bool queued;              /* manager lock: waiting in the copy queue */
    bool gone;                /* its topic was deleted and every remote segment with it */
    /* Replication (copier holding busy): whether other replicas read the
     * manifest (replica count > 1), the leader epoch this broker leads in
     * (-1: not leading), the epoch whose manifest it read on taking the
     * lead and the epoch it last wrote the manifest in. */
    bool replicated;
    int32_t leading_epoch;
    int32_t synced_epoch;
    int32_t manifest_epoch;
    /* Read-ahead (the cache lock): the segment and chunk the last fetch was
     * served from or waited for (never evicted), read-ahead downloads still
     * in flight, and the bytes of read-ahead chunks no fetch reached yet. */
    uint8_t reading_id[16];
    int64_t reading_chunk;
    bool reading_known;
    int32_t ahead_loading;
    int64_t ahead_bytes;
};

/* A remote segment list read back from a file or a manifest. */
struct tiered_list {
    struct tiered_segment *segs;
    size_t count;
    int64_t log_start_offset;
    int32_t leader_epoch; /* the epoch of the leader that wrote it; -1 in a broker's own file */
};

/* What a failed remote operation was doing: the op label of
 * cairn_remote_errors_total. */
enum tiered_op { TIERED_OP_COPY, TIERED_OP_FETCH, TIERED_OP_DELETE, TIERED_OP_COUNT };

/* Why it failed: the kind label. The plugin ABI's status codes say
 * missing (CAIRN_NOT_FOUND) and unavailable (CAIRN_RETRIABLE: an outage, a
 * throttled or timed-out request; the ABI has no separate timeout code);
 * corrupt is Cairn's own check of downloaded bytes failing; other is every
 * other status, and failures on this broker (its disk, its memory). */
enum tiered_error_kind {
    TIERED_ERROR_MISSING,
    TIERED_ERROR_CORRUPT,
    TIERED_ERROR_UNAVAILABLE,
    TIERED_ERROR_OTHER,
    TIERED_ERROR_KIND_COUNT
};

/* The object a remote fetch brings: the object label of
 * cairn_remote_fetch_latency_seconds. */
enum tiered_fetch_object { TIERED_FETCH_SEGMENT, TIERED_FETCH_INDEX, TIERED_FETCH_MANIFEST, TIERED_FETCH_OBJECT_COUNT };

struct tiered_metrics {
    struct metrics_metric *bytes_copied;
    struct metrics_metric *segments_copied;
    struct metrics_metric *segments_deleted;
    struct metrics_metric *errors[TIERED_OP_COUNT][TIERED_ERROR_KIND_COUNT];
    struct metrics_metric *fetch_latency[TIERED_FETCH_OBJECT_COUNT]; /* every plugin fetch call, failed ones too */
    struct metrics_metric *fetch_requests;
    struct metrics_metric *fetch_bytes;
    struct metrics_metric *cache_hits;
    struct metrics_metric *cache_misses;
    struct metrics_metric *read_ahead_started;
    struct metrics_metric *read_ahead_hits;
    struct metrics_metric *copy_lag_segments;
    struct metrics_metric *copy_lag_bytes;
    struct metrics_metric *copy_throttle_ms;  /* time copiers waited on the copy quota */
    struct metrics_metric *fetch_throttled;   /* remote reads answered empty by the fetch quota */
    struct metrics_metric *fetch_throttle_ms; /* the fetch quota's throttle time at each of those */
};

struct tiered_cache; /* tiered_fetch.c */

struct tiered {
    struct tiered_options opts;
    const struct cairn_remote_storage_vtable *rsm;
    void *rsm_instance;
    const char *plugin_name;
    char *meta_dir;
    pthread_mutex_t lock; /* parts, the queue, stopping */
    pthread_cond_t work;  /* the copy queue or stopping changed */
    pthread_cond_t tick;  /* the task thread's sleep */
    struct tiered_partition **parts;
    size_t part_count, part_cap;
    struct tiered_partition **queue;
    size_t queue_count, queue_cap;
    bool stopping;
    pthread_t task_thread;
    bool task_started;
    pthread_t *copiers;
    size_t copier_count;
    struct tiered_cache *cache;
    struct tiered_metrics metrics;
    /* KIP-956: copies wait while copy_quota is exceeded (on quota_wake,
     * with lock); downloads are not started while fetch_quota is. */
    struct tiered_quota copy_quota;
    struct tiered_quota fetch_quota;
    pthread_cond_t quota_wake; /* stopping or a new copy quota */
    /* The store failing as unavailable (lock): failures in a row, and the
     * monotonic time before which no copier calls it (tiered_backoff.c). */
    int32_t store_failures;
    int64_t store_retry_at_ms;
};

/* tiered_metadata.c: the per-partition file
 * <state_dir>/remote-log-metadata/<topic>-<partition>-<topic id hex>.json,
 * replaced atomically (write, fsync, rename, directory fsync). */
int tiered_metadata_save(struct tiered_partition *p, char *err, size_t errlen);
/* The list as JSON text (malloc'd; NULL when out of memory). Caller holds
 * p->lock. */
char *tiered_metadata_text(const struct tiered_partition *p, int32_t leader_epoch);
/* Parses text written by tiered_metadata_text for partition p (another
 * partition's list is refused). Returns 0, or -1 with err. */
int tiered_metadata_parse(const char *text, size_t len, const struct tiered_partition *p, struct tiered_list *out,
                          char *err, size_t errlen);
void tiered_list_free(struct tiered_list *l);

/* tiered_manifest.c: the partition's list kept in the remote store itself,
 * as an object only the leader writes and every replica reads (see the
 * file's comment for how it rides on copy_segment / fetch_segment). */
/* Writes p's list (the leader, at epoch). Returns 0, or -1 (logged). */
int tiered_manifest_write(struct tiered *t, struct tiered_partition *p, int32_t epoch);
/* Replaces p's list by the manifest's and saves it locally. Returns 0, 1
 * when the store holds no manifest (p unchanged), -1 on a failure (logged). */
int tiered_manifest_read(struct tiered *t, struct tiered_partition *p);
/* Deletes the manifest object (a deleted topic). Returns 0 or -1. */
int tiered_manifest_delete(struct tiered *t, struct tiered_partition *p);
/* Loads every file of dir into new partitions appended to t->parts. */
int tiered_metadata_load_all(struct tiered *t, char *err, size_t errlen);
void tiered_segment_free(struct tiered_segment *s);
void tiered_hex(const uint8_t *bytes, size_t n, char *out);

/* tiered_manager.c */
/* The partition for (topic, partition, topic id), created (empty) when
 * missing; NULL when out of memory. Caller holds t->lock. */
struct tiered_partition *tiered_partition_get_locked(struct tiered *t, const char *topic, int32_t partition,
                                                     const uint8_t topic_id[16]);
/* Finds it without creating; caller holds t->lock. */
struct tiered_partition *tiered_partition_find_locked(struct tiered *t, const char *topic, int32_t partition);
/* Offsets the local log learns from the remote list: the first remote
 * offset and the end of the copied prefix; -1 when none. Caller holds p->lock. */
void tiered_partition_offsets_locked(const struct tiered_partition *p, int64_t *remote_start, int64_t *copied_end);
/* Fills a plugin view of segment s of p (pointers into both). */
void tiered_segment_view(const struct tiered *t, const struct tiered_partition *p, const struct tiered_segment *s,
                         struct cairn_remote_segment *out);

/* tiered_metrics.c */
void tiered_metrics_register(struct tiered_metrics *m);
/* The error kind of a plugin call's status (not CAIRN_OK). */
enum tiered_error_kind tiered_error_kind_of(int status);
/* Counts one failed remote operation in cairn_remote_errors_total. */
void tiered_count_error(struct tiered *t, enum tiered_op op, enum tiered_error_kind kind);
/* Records one plugin fetch call that started at started_ns
 * (clock_mono_ns) in cairn_remote_fetch_latency_seconds. */
void tiered_observe_fetch(struct tiered *t, enum tiered_fetch_object object, int64_t started_ns);

/* tiered_backoff.c: one store-wide backoff for the copiers' remote work
 * (copies, deletes, manifests), Kafka's remote.log.manager.task.retry.*.
 * While the store fails as unavailable, a copier makes one call after each
 * backoff and skips the rest, so a pass spends about one plugin retry
 * budget however much work waits (reads have their own retry delay). */
/* Whether a copier may call the store now: yes while it answers; after a
 * failure, once the backoff ended, to exactly one caller (which then owns
 * the next attempt: the time moves on by another backoff meanwhile). */
bool tiered_store_admit(struct tiered *t);
/* Records a plugin call's status: CAIRN_RETRIABLE starts or lengthens the
 * backoff, CAIRN_OK ends it, other failures leave it. */
void tiered_store_note(struct tiered *t, int status);

/* tiered_copy.c, on a copier thread holding p->busy. */
void tiered_copy_partition(struct tiered *t, struct tiered_partition *p, int64_t now_ms);
/* Deletes the remote segments of a partition whose topic is gone. */
void tiered_delete_partition(struct tiered *t, struct tiered_partition *p);

/* tiered_fetch.c */
int tiered_cache_create(struct tiered *t, char *err, size_t errlen);
void tiered_cache_destroy(struct tiered *t);

#endif
