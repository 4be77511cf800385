/* The partition_log struct, shared by the files of core/log only. */
#ifndef CAIRN_LOG_PARTITION_LOG_INTERNAL_H
#define CAIRN_LOG_PARTITION_LOG_INTERNAL_H
#include <pthread.h>
#include <stdatomic.h>

#include "log/leader_epoch_cache.h"
#include "log/log_segment.h"
#include "log/producer_state.h"
#include "log/partition_log.h"
#include "log/txn_index.h"

/* Locking: write_lock serialises every mutation; lock (rwlock) guards the
 * segment array, each segment's index arrays/size and the epoch array, and
 * is held exclusively only while a mutation is published. Offsets are atomics
 * so getters need no lock. */
struct partition_log {
    char *dir;
    struct log_config cfg;
    pthread_mutex_t write_lock;
    pthread_rwlock_t lock;
    struct log_segment **segments; /* ascending base offset; last is active */
    size_t segment_count, segment_cap;
    _Atomic int64_t log_start_offset; /* the local log start */
    _Atomic int64_t log_end_offset;
    /* Tiered storage, set by its manager (partition_log_set_remote_offsets):
     * the first offset held remotely and the offset below which every
     * closed segment's copy is confirmed; -1 when none. */
    _Atomic int64_t remote_start_offset;
    _Atomic int64_t remote_copied_end;
    /* A DeleteRecords start below the local start (the remote part of the
     * log): no offset below it is served; -1 when none. */
    _Atomic int64_t remote_floor;
    /* Compacted tiered topics (partition_log_claim_for_copy): the end of the
     * last segment the copier claimed (-1: none); remote_published once the
     * remote log manager has set the offsets above; clean_checkpoint the
     * first dirty offset the cleaner last worked from (-1: unknown). Written
     * under write_lock. */
    _Atomic int64_t copy_claimed_end;
    atomic_bool remote_published;
    _Atomic int64_t clean_checkpoint;
    /* While hw_tracks_end the high watermark is log_end_offset and
     * high_watermark is unused; otherwise high_watermark holds it. Changed
     * under write_lock, read without a lock (see partition_log_high_watermark). */
    _Atomic int64_t high_watermark;
    atomic_bool hw_tracks_end;
    _Atomic int64_t recovery_point;
    /* Base offset of the newest segment rolled since the segments before it
     * were last flushed; -1 when none is waiting (see flush_rolled). */
    _Atomic int64_t rolled_unflushed;
    uint64_t truncations;       /* write_lock; counts partition_log_truncate_to calls that cut */
    int64_t unflushed_records;  /* write_lock */
    int64_t first_unflushed_ms; /* write_lock; -1 when all flushed */
    /* Serialises partition_log_flush_to callers, which fdatasync without
     * write_lock; taken before write_lock, never inside it. */
    pthread_mutex_t flush_lock;
    /* write_lock + lock exclusive to change; lock shared to read (write_lock
     * holders may read it without lock). */
    struct leader_epoch_cache epochs;
    struct producer_state *producers; /* write_lock */
    /* Transaction verification guards (partition_log_verify.c): producer id
     * -> the guard of a verification begun for it. write_lock. */
    struct txn_verify_guard *verify_guards;
    size_t verify_guard_count, verify_guard_cap;
    /* Smallest first offset of an open transaction, -1 when none: the LSO
     * bound. Written under write_lock, read without a lock. */
    _Atomic int64_t first_unstable_offset;
    struct txn_index aborted; /* write_lock + lock exclusive to change; lock shared to read */
    atomic_int refcount;
    atomic_bool offline;
    atomic_bool replication_waits_cancelled; /* set once, by a stopping broker */
    atomic_bool deleted;
    /* Where partition_log_delete moved the directory (Kafka's
     * "<topic>-<partition>.<id>-delete"), removed with the last reference;
     * NULL when it could not be moved. Written before deleted is set. */
    char *removal_dir;
    /* Set when open created the directory or its first segment: their
     * directory entries (and partition.metadata, leader-epoch-checkpoint,
     * written unsynced meanwhile) are made durable by the first flush,
     * before it moves the recovery point (partition_log_sync_new_dir). */
    atomic_bool dir_unsynced;
    struct partition_log_recovery_stats recovery; /* written once by open */
    /* Lazy open (partition_log_open_deferred): false until the first use
     * that needs the segments, epochs or producer state loads them
     * (partition_log_ensure_loaded); meanwhile the offsets are those of the
     * clean-shutdown checkpoints and no file of the partition is open.
     * Set once, under load_lock, and never cleared. */
    atomic_bool loaded;
    /* Taken before write_lock, never inside it; guards the deferred_*
     * fields: what happened to the log before it was loaded, applied by the
     * load (the leader epoch the replica layer assigned, -1 none; the topic
     * id to write into partition.metadata when it has none). */
    pthread_mutex_t load_lock;
    int32_t deferred_leader_epoch;
    bool deferred_topic_id_set;
    uint8_t deferred_topic_id[16];
};

/* A log with its locks and defaults set and nothing loaded (loaded = true:
 * the caller loads it). NULL when out of memory. */
struct partition_log *partition_log_alloc(const char *dir, const struct log_config *cfg);
/* Closes the segments and frees everything. */
void partition_log_free(struct partition_log *log);
/* Loads a deferred log on its first use; 0 at once when loaded. Returns 0
 * or an errno value (the log stays unloaded and a later use tries again).
 * Never called holding write_lock or lock. */
int partition_log_ensure_loaded(struct partition_log *log);
/* The bytes of a deferred log's segment files, from the directory (no file
 * opened); 0 when it cannot be listed. */
int64_t partition_log_deferred_size(struct partition_log *log);

/* Helpers used across files; callers hold write_lock. */
int partition_log_roll_locked(struct partition_log *log, int64_t now_ms);
int16_t partition_log_flush_locked(struct partition_log *log);
/* fsyncs the log's directory and its parent once, if open created them;
 * a flush calls it before counting anything as durable. 0 or errno. */
int partition_log_sync_new_dir(struct partition_log *log);
void partition_log_mark_offline(struct partition_log *log, const char *what, int err);
/* Validates every batch of an append and counts its records and batches;
 * nothing is modified (partition_log_validate.c). KAFKA_ERR_NONE or the
 * error, with res->error_message (and res->record_index) filled. */
int16_t partition_log_validate_all(const struct partition_log *log, enum log_append_origin origin,
                                   const uint8_t *batches, size_t len, int32_t *records, int32_t *batch_count,
                                   struct log_append_result *res);
/* Leader epoch cache (partition_log_epochs.c). */
/* Write leader-epoch-checkpoint from the cache. Returns 0 or an errno value. */
int partition_log_write_epochs(struct partition_log *log);
/* The same; a failure takes the log offline (KAFKA_STORAGE_ERROR). */
int16_t partition_log_save_epochs_locked(struct partition_log *log);
/* Record the epochs of batches about to be written (offsets assigned, epochs
 * stamped when leader_epoch >= 0), before the log end moves past them, and
 * write the file when an epoch starts. Returns a Kafka error. */
int16_t partition_log_assign_epochs_locked(struct partition_log *log, const uint8_t *batches, size_t len,
                                           int32_t leader_epoch);
/* At open, once the segments are loaded and the log end is known: read the
 * file; rebuild it from the batches when it is missing or malformed on a log
 * holding data; drop entries starting past the log end; after an unclean stop
 * (recovery_point >= 0), add the epochs the rescanned batches start.
 * Returns 0 or an errno value with err. */
int partition_log_open_epochs_locked(struct partition_log *log, int64_t recovery_point, char *err, size_t errlen);
/* The log end moved back to end_offset / the log start moved forward to
 * start_offset. Callers hold both locks, and save the file (after
 * releasing lock) when these return true. */
bool partition_log_epochs_end_moved(struct partition_log *log, int64_t end_offset);
bool partition_log_epochs_start_moved(struct partition_log *log, int64_t start_offset);
/* Producer state (partition_log_producers.c); callers hold write_lock. */
/* Replace the state with the latest snapshot <= log end plus a scan of the
 * batches after it; removes snapshots past the log end. Returns 0 or errno. */
int partition_log_load_producers_locked(struct partition_log *log);
/* Write <log end>.snapshot. */
void partition_log_snapshot_producers_locked(struct partition_log *log);
/* Remove snapshots below the first segment's base offset. */
void partition_log_remove_old_snapshots_locked(struct partition_log *log);
/* Check every batch of an append against the producer state. Returns a
 * Kafka error; *duplicate is set (with the original offsets in res) when the
 * single batch is already in the log. from_coordinator: the broker's own
 * coordinator writes (sequence-less transactional batches allowed). */
int16_t partition_log_check_producers_locked(struct partition_log *log, const uint8_t *batches, size_t len,
                                             bool from_coordinator, bool *duplicate, struct log_append_result *res);
/* With guard non-NULL (a Produce under transaction verification): a
 * transactional batch that would open a transaction must carry the guard
 * the log gave its producer (partition_log_txn_verification_start), else
 * INVALID_TXN_STATE; an accepted one consumes the guard. */
int16_t partition_log_check_verification_locked(struct partition_log *log, const uint8_t *batches, size_t len,
                                                const uint64_t *guard, struct log_append_result *res);
/* A marker for the producer was accepted: its verification ends. */
void partition_log_clear_verification_locked(struct partition_log *log, int64_t producer_id);
/* Lower first_unstable_offset for transactions the batches (offsets
 * assigned, not yet published) open: before the log end moves, so no reader
 * sees their records below the LSO. */
void partition_log_note_open_txns_locked(struct partition_log *log, const uint8_t *batches, size_t len);
/* Record the batches just appended (offsets already assigned). */
void partition_log_update_producers_locked(struct partition_log *log, const uint8_t *batches, size_t len);
/* Apply one batch of the log to the producer state as recovery does: a data
 * batch records its producer (no sequence check), a COMMIT/ABORT marker ends
 * the transaction and fills the aborted list and .txnindex. batch is needed
 * for control batches only. Returns 0 or an errno value. */
int partition_log_replay_batch_locked(struct partition_log *log, const struct record_batch_header *h,
                                      const uint8_t *batch, size_t size);
/* The replication origin's producer side: replay every batch of a
 * follower append (offsets as the leader gave them), in order, then
 * recompute the LSO bound. Runs before the log end moves past them. Returns
 * 0 or an errno value. */
int partition_log_replay_batches_locked(struct partition_log *log, const uint8_t *batches, size_t len);

/* Validate nothing, assign offsets and write batches that passed every
 * check (records: their record count). Caller holds write_lock. The
 * leader's path; partition_log_append_as(LOG_APPEND_REPLICATION) writes a
 * follower's copy without assigning anything. */
int16_t partition_log_append_locked(struct partition_log *log, uint8_t *batches, size_t len, int32_t leader_epoch,
                                    int32_t records, struct log_append_result *res);
/* The common tail of both append paths, for batches whose offsets and
 * epochs are final: roll when due, write, publish the new log end and keep
 * the producer state in step. follower: the state follows the batches
 * (markers included) as recovery would rebuild it; otherwise the leader's
 * checks have run and the state is updated as for a produce. Fills res's
 * offsets once the batches are published. Caller holds write_lock. */
int16_t partition_log_write_batches_locked(struct partition_log *log, const uint8_t *batches, size_t len,
                                           int64_t last_offset, int32_t records, int64_t now, bool follower,
                                           struct log_append_result *res);
/* The replication origin (partition_log_follower.c), after validation:
 * check the offsets follow the log end, record the batches' epochs, write.
 * Caller holds write_lock. */
int16_t partition_log_append_follower_locked(struct partition_log *log, const uint8_t *batches, size_t len,
                                             int32_t records, struct log_append_result *res);
/* Index of the last segment with base_offset <= offset (0 if none); under
 * write_lock or lock. */
size_t partition_log_segment_for(const struct partition_log *log, int64_t offset);

/* Transactions (partition_log_txn.c); callers hold write_lock. */
/* End the producer's transaction at marker_offset; for an abort, record it
 * in the aborted list and the marker segment's .txnindex. Returns 0 or an
 * errno value. */
int partition_log_complete_txn_locked(struct partition_log *log, int64_t producer_id, int16_t epoch,
                                      int32_t coordinator_epoch, bool commit, int64_t marker_offset, int64_t timestamp);
/* Recompute first_unstable_offset from the producer state. */
void partition_log_refresh_unstable_locked(struct partition_log *log);
/* Reload the aborted list from the .txnindex files, dropping (and removing
 * from the files) entries whose marker is at or after from: the replay of
 * the batches from there re-adds them. Returns 0 or an errno value. */
int partition_log_load_aborted_locked(struct partition_log *log, int64_t from);
/* What a control batch holds: a COMMIT or ABORT marker, no record at all
 * (emptied), or something else. *coordinator_epoch (may be NULL) is the
 * marker's, -1 when unknown. Needs no lock. */
enum log_marker_kind {
    LOG_MARKER_OTHER,
    LOG_MARKER_ABORT,
    LOG_MARKER_COMMIT,
    LOG_MARKER_EMPTY,
};
enum log_marker_kind partition_log_marker_kind(const uint8_t *batch, size_t len, int32_t *coordinator_epoch);
/* The cleaner drops the ABORT markers of gone[0..n) (ascending marker
 * offset): remove their entries from the .txnindex files of the segments
 * holding the markers, then from the aborted list. Returns 0 or an errno
 * value (the list is then unchanged; files may have lost entries, which
 * only ever name markers without data). */
int partition_log_forget_aborted_locked(struct partition_log *log, const struct txn_index_entry *gone, size_t n);
/* Replay a control batch found by the recovery scan (batch bytes of size len). */
int partition_log_replay_marker_locked(struct partition_log *log, const uint8_t *batch, size_t len);

/* What one read of a partition dir at open finds (partition_log_dir.c):
 * base offsets of <base>.log, <base>.log.cleaned and <base>.log.swap, each
 * ascending. Owned by the thread opening the log. */
struct partition_dir_offsets {
    int64_t *bases;
    size_t count, cap;
};

struct partition_dir_scan {
    struct partition_dir_offsets segments;
    struct partition_dir_offsets cleaned;
    struct partition_dir_offsets swaps;
};

/* Returns 0 or an errno value (out is then empty). */
int partition_dir_scan(const char *dir, struct partition_dir_scan *out);
/* Add a segment a completed swap created, keeping the list sorted and
 * without duplicates. Returns 0 or ENOMEM. */
int partition_dir_scan_add_segment(struct partition_dir_scan *scan, int64_t base);
void partition_dir_scan_free(struct partition_dir_scan *scan);

/* Delete the scan's *.cleaned files and complete its *.swap ones (retire
 * the segments merged into each, replace the .log, rebuild its indexes),
 * keeping the scan's segments in step. Runs before the segments are opened. Returns how many swaps
 * were completed, or -1 with err. */
int partition_log_clean_recover_files(const char *dir, struct partition_dir_scan *scan, const struct log_config *cfg,
                                      int64_t now_ms, char *err, size_t errlen);

/* Remove segments[0], which must not be the active one; under both locks. */
void partition_log_remove_first_segment(struct partition_log *log);

/* Most bytes the records of one compressed batch may decompress to:
 * well above any honest compression ratio of a max.message.bytes batch,
 * low enough that a crafted batch cannot exhaust memory. */
static inline size_t log_decompressed_limit(const struct log_config *cfg)
{
    size_t limit = cfg->max_message_bytes > 0 ? (size_t)cfg->max_message_bytes * 16 : 0;
    return limit < 64u * 1024 * 1024 ? 64u * 1024 * 1024 : limit;
}

#endif
