/* The metadata log as the controller and the loader see it: a log they do
 * not own. The controller appends batches of record values at the leader
 * epoch; the log tells a listener about every committed batch in offset
 * order (Kafka's RaftClient.Listener.handleCommit) and about a snapshot to
 * start from (handleLoadSnapshot). The loader is that listener.
 *
 * Today's implementation is the single-voter local log below: append +
 * fsync is the commit, and the listener hears about the batch before append
 * returns. A Raft quorum implements the same ops later: append then returns
 * once the leader has the batch, and handle_commit runs when the high
 * watermark passes it (on the Raft thread); the controller already waits for
 * the loader to reach its offset rather than for append to return.
 *
 * Thread-safety: the local log is not thread-safe; the store calls it under
 * its write mutex (and during open, before the store is shared). */
#ifndef CAIRN_METADATA_METADATA_LOG_H
#define CAIRN_METADATA_METADATA_LOG_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log/log_manager.h"

/* The one place that names the metadata log's directory. */
#define METADATA_LOG_TOPIC_DIR LOG_MANAGER_METADATA_TOPIC "-0"

/* One record value of a batch. */
struct metadata_log_entry {
    const uint8_t *value;
    size_t len;
};

/* A committed batch: records at base_offset, base_offset + 1, ... */
struct metadata_batch {
    int64_t base_offset;
    int32_t epoch; /* leader epoch the batch was written at */
    int64_t append_time_ms;
    const struct metadata_log_entry *records;
    int32_t count;
    size_t bytes; /* size of the batch in the log */
};

/* Kafka's snapshot id: every record below end_offset is in the snapshot;
 * epoch is the leader epoch of the last one. */
struct metadata_snapshot_id {
    int64_t end_offset;
    int32_t epoch;
};

/* Callbacks from the log; ctx is the listener's. A non-zero return stops a
 * catch-up replay at open (the log reports it) and is otherwise logged. */
struct metadata_log_listener {
    void *ctx;
    int (*handle_commit)(void *ctx, const struct metadata_batch *batch);
    /* The records rebuild the whole state as of id; later commits follow. */
    int (*handle_load_snapshot)(void *ctx, const struct metadata_snapshot_id *id,
                                const struct metadata_log_entry *records, int32_t count);
};

struct metadata_log_ops {
    /* Registers the one listener and catches it up: the newest snapshot (if
     * any), then every committed batch after it. Returns 0, or -1 with err
     * (a corrupt newest snapshot, an unreadable log). */
    int (*register_listener)(void *log, const struct metadata_log_listener *listener, char *err, size_t errlen);
    /* Hands one batch to the log at epoch (the current leader epoch). On 0,
     * *last_offset is the offset its last record gets; the listener hears of
     * the commit. Returns METADATA_LOG_NOT_LEADER when this node does not
     * lead the log at epoch, or -1 with err when nothing was appended. */
    int (*append)(void *log, int32_t epoch, const struct metadata_log_entry *records, int32_t count,
                  int64_t *last_offset, char *err, size_t errlen);
    /* The epoch to append at, or -1 while this node cannot write: a quorum
     * node that does not lead, or a new leader whose listener has not yet
     * heard of every entry its log holds (the controller would validate
     * against a stale image). */
    int32_t (*leader_epoch)(void *log);
    /* Optional: true while this node leads but its listener has not heard
     * of every entry yet (leader_epoch says -1 meanwhile). */
    bool (*catching_up)(void *log);
    int64_t (*end_offset)(void *log);
    /* Snapshot hooks: the newest snapshot's id (false when none), and
     * storing a snapshot of the state at id (records that rebuild it). */
    bool (*latest_snapshot)(void *log, struct metadata_snapshot_id *out);
    int (*create_snapshot)(void *log, const struct metadata_snapshot_id *id, int64_t last_timestamp_ms,
                           const struct metadata_log_entry *records, int32_t count, char *err, size_t errlen);
};

/* append's answer when another node leads (the controller answers
 * NOT_CONTROLLER). */
#define METADATA_LOG_NOT_LEADER (-2)

/* ---- the single-voter local log: <parent_dir>/__cluster_metadata-0 ---- */

struct metadata_log;

extern const struct metadata_log_ops metadata_local_log_ops;

/* Opens (creating when missing) the log directory, running recovery: a torn
 * or corrupt tail is truncated. Snapshots are read at register_listener. */
int metadata_log_open(const char *parent_dir, struct metadata_log **out, char *err, size_t errlen);
void metadata_log_close(struct metadata_log *log);
/* Stops handing committed batches to the listener (a store closing calls
 * it before it tears down what the listener uses); idempotent. */
void metadata_log_stop_delivery(struct metadata_log *log);

/* Offset the next appended record gets. */
int64_t metadata_log_end_offset(struct metadata_log *log);

/* Appends the values as one batch (null keys) stamped with leader_epoch,
 * then fsyncs (the single voter's commit) and tells the listener, if any.
 * *base_offset_out gets the first record's offset. Returns 0, or -1 with
 * err (nothing is appended on error). */
int metadata_log_append(struct metadata_log *log, const struct metadata_log_entry *entries, int32_t count,
                        int32_t leader_epoch, int64_t *base_offset_out, char *err, size_t errlen);

#endif
