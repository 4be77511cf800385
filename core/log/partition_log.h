/* The log of one partition: a directory of segments in Kafka's layout
 * (<dir>/<20-digit base offset>.log/.index/.timeindex, partition.metadata,
 * leader-epoch-checkpoint).
 *
 * Thread-safety: all functions may be called from any thread concurrently.
 * Writers (append, roll, truncate, retention, flush) are serialised by an
 * internal mutex; readers take an internal rwlock shared and never wait for a
 * write() or fdatasync() in progress, only for the short index/segment-list
 * update that publishes it. Lifetime is reference counted: open returns one
 * reference; partition_log_close drops it, and the memory (and, after
 * partition_log_delete, the directory) goes away with the last reference. */
#ifndef CAIRN_LOG_PARTITION_LOG_H
#define CAIRN_LOG_PARTITION_LOG_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log/log_config.h"

struct partition_log;
struct producer_entry;

struct log_append_result {
    int64_t base_offset;
    int64_t last_offset;
    int64_t log_append_time; /* -1 under CreateTime */
    int64_t log_start_offset;
    int32_t record_count;
    bool duplicate;          /* a retried idempotent batch: offsets are the original ones, nothing written */
    int32_t record_index;    /* a refusal caused by one record: its index in its batch, else -1 */
    char error_message[160]; /* reason when the append was rejected */
};

/* A file region holding whole batches. fd is a dup() the caller closes
 * (-1 when len is 0). */
struct log_read_result {
    int fd;
    int64_t file_pos;
    int64_t len;
    int64_t log_start_offset;
    int64_t log_end_offset;
    int64_t next_offset; /* the offset after the returned batches (fetch offset when none) */
};

/* Open or create the log in dir. recover=true (unclean shutdown) rescans
 * every segment, validating CRCs, cutting a torn tail and rebuilding indexes;
 * false trusts the files but checks the last segment's index and tail. */
int partition_log_open(const char *dir, const struct log_config *cfg, bool recover, struct partition_log **out,
                       char *err, size_t errlen);
/* As above, rescanning only segments that may hold offsets >= recovery_point
 * (data below it was flushed). A negative recovery_point means "trust all".
 * Rescanned data is not flushed here: the log's recovery point stays at
 * recovery_point until the next flush. */
int partition_log_open_from(const char *dir, const struct log_config *cfg, int64_t recovery_point,
                            struct partition_log **out, char *err, size_t errlen);

/* A log of a cleanly stopped broker, opened without touching its files:
 * the offsets are the checkpointed ones (log start, log end = recovery
 * point, high watermark; hw < 0 when none) and the segments, index files,
 * leader epochs and producer state are read by the first call that needs
 * them (append, read, offsets by time or epoch, retention, cleaning,
 * truncation, ...), as partition_log_open_from(dir, cfg, -1) would. The
 * getters of the offsets, the configs and the high watermark calls answer
 * without loading. Returns KAFKA_ERR_NONE, or a Kafka error with err. */
int partition_log_open_deferred(const char *dir, const struct log_config *cfg, int64_t log_start, int64_t log_end,
                                int64_t high_watermark, struct partition_log **out, char *err, size_t errlen);
/* A new, empty log in dir (created here; EEXIST is an error): the
 * directory only, the segment files made by the first use as above.
 * Returns KAFKA_ERR_NONE, or a Kafka error with err. */
int partition_log_create_deferred(const char *dir, const struct log_config *cfg, struct partition_log **out, char *err,
                                  size_t errlen);
/* Whether the log's files have been loaded (always, unless deferred). */
bool partition_log_is_loaded(struct partition_log *log);
/* For a deferred log not yet loaded: remember topic_id and write it to
 * partition.metadata at the load when the file has none; returns true.
 * Returns false (nothing done) for a loaded log. */
bool partition_log_defer_topic_id(struct partition_log *log, const uint8_t topic_id[16]);

/* What opening after an unclean stop cost: bytes of segments rescanned
 * (CRC-checked) and the time spent scanning them and rebuilding producer
 * state. All zero for a clean open. */
struct partition_log_recovery_stats {
    int64_t scanned_bytes;
    int64_t scan_ns;
    int64_t producers_ns;
};
void partition_log_recovery_stats(const struct partition_log *log, struct partition_log_recovery_stats *out);

void partition_log_retain(struct partition_log *log);
/* Drop a reference; the last one closes files (flushing them first). */
void partition_log_close(struct partition_log *log);
/* Mark for removal: the directory is moved aside at once (renamed to
 * "<dir>.<random hex>-delete", so the name is free for a new incarnation)
 * and deleted when the last reference goes; drops the caller's reference.
 * Appends and reads fail from now on. */
#define PARTITION_LOG_DELETED_SUFFIX "-delete"
void partition_log_delete(struct partition_log *log);
/* Removes a partition directory's files and the directory (no subdirectories
 * are expected); failures are logged. */
void partition_log_remove_dir(const char *dir);

/* Who wrote the batches of an append (Kafka's AppendOrigin, and the split
 * between UnifiedLog.appendAsLeader and appendAsFollower). */
enum log_append_origin {
    /* A client's Produce on the leader: offsets assigned, partitionLeaderEpoch
     * stamped (leader_epoch >= 0), producer sequences checked, control
     * batches refused, keyless records refused on compacted topics. */
    LOG_APPEND_CLIENT,
    /* The broker's own coordinators on the leader: as CLIENT, but a
     * transactional batch without a sequence (TxnOffsetCommit records) is
     * accepted, checked only against the producer's epoch. Never for bytes
     * a client sent. */
    LOG_APPEND_COORDINATOR,
    /* A follower copying the leader's batches: offsets, partitionLeaderEpoch
     * and timestamps are kept as they are (leader_epoch is ignored). The
     * first batch must start at or past the log end and offsets must
     * increase from batch to batch (OFFSET_OUT_OF_RANGE otherwise, nothing
     * written); a gap is allowed, as a compacted leader log has them. The
     * epoch cache follows the batches' epochs; producer state, transactions
     * and the .txnindex follow the batches, markers included, without
     * checking sequences. */
    LOG_APPEND_REPLICATION,
};

/* Validate (framing, magic 2, CRC, sizes) and append; see the origins.
 * Returns KAFKA_ERR_NONE or the Kafka error that rejected the whole request
 * (nothing is written then). For CLIENT and COORDINATOR, leader_epoch < 0
 * leaves partitionLeaderEpoch as sent (the epoch cache then follows the
 * batches' own epochs). */
int16_t partition_log_append_as(struct partition_log *log, enum log_append_origin origin, uint8_t *batches, size_t len,
                                int32_t leader_epoch, struct log_append_result *res);
/* partition_log_append_as with LOG_APPEND_CLIENT / LOG_APPEND_COORDINATOR. */
int16_t partition_log_append(struct partition_log *log, uint8_t *batches, size_t len, int32_t leader_epoch,
                             struct log_append_result *res);
int16_t partition_log_append_coordinator(struct partition_log *log, uint8_t *batches, size_t len, int32_t leader_epoch,
                                         struct log_append_result *res);

/* Transaction verification (KIP-890 part 1). Before a Produce's
 * transactional batch for producer_id is checked with the transaction
 * coordinator, the leader takes a guard: *guard is 0 when the producer
 * already has a transaction open here (nothing to verify), else a value
 * unique to this verification (a second one in flight for the producer
 * shares it). A marker for the producer, or the batch that opens its
 * transaction, ends the guard, so a guard verified before a transaction
 * ended cannot open a new one. Returns a Kafka error code. */
int16_t partition_log_txn_verification_start(struct partition_log *log, int64_t producer_id, uint64_t *guard);
/* partition_log_append for a Produce under verification: a transactional
 * batch that would open a transaction is INVALID_TXN_STATE (nothing
 * written) unless guard is the producer's current one. */
int16_t partition_log_append_verified(struct partition_log *log, uint8_t *batches, size_t len, int32_t leader_epoch,
                                      uint64_t guard, struct log_append_result *res);

/* For Produce's per-record errors after an append to a compacted topic
 * failed with INVALID_RECORD: the number of keyless records in batches,
 * writing the index of each within its batch to indexes (at most cap).
 * 0 when the topic is not compacted, -1 when the batches cannot be read. */
int32_t partition_log_keyless_records(const struct partition_log *log, const uint8_t *batches, size_t len,
                                      int32_t *indexes, int32_t cap);

/* Whole batches from the one holding fetch_offset, up to max_bytes (at least
 * one batch), none with an offset >= max_offset_exclusive. */
int16_t partition_log_read(struct partition_log *log, int64_t fetch_offset, int32_t max_bytes,
                           int64_t max_offset_exclusive, struct log_read_result *out);

/* The log start offset: with tiered storage the first offset held
 * remotely when that is below the local log's first one. */
int64_t partition_log_start_offset(struct partition_log *log);
/* The first offset held in local segments (KIP-1005's earliest-local);
 * the same as partition_log_start_offset without tiered storage. Reads
 * below it (partition_log_read) answer OFFSET_OUT_OF_RANGE. */
int64_t partition_log_local_start_offset(struct partition_log *log);
int64_t partition_log_end_offset(struct partition_log *log);

/* High watermark: the offset below which every record is replicated to the
 * ISR, so consumers read up to it. Always within [log start, log end]. Moved
 * by the replica layer (core/replica); it never goes backward except when
 * truncation cuts the log below it. While the log "tracks its end" (the
 * default, and a leader whose ISR is itself alone) it is the log end, so an
 * append costs nothing extra. */
int64_t partition_log_high_watermark(struct partition_log *log);
/* Move it to offset (clamped to the log end); a lower value than the
 * current one changes nothing. Returns the high watermark after the call. */
int64_t partition_log_update_high_watermark(struct partition_log *log, int64_t offset);
/* track=true: the high watermark follows the log end from now on. false: it
 * stays where it is (the log end at the time of the call, when it was
 * tracking) until partition_log_update_high_watermark moves it. */
void partition_log_set_high_watermark_tracks_end(struct partition_log *log, bool track);
bool partition_log_high_watermark_tracks_end(struct partition_log *log);
/* Waits until the records below end, appended here at leader epoch epoch,
 * are replicated (the high watermark reaches end), as an acks=all produce
 * does. A coordinator calls it after writing its own state or a marker, so
 * that it answers only for what survives a change of leader. Returns NONE,
 * NOT_LEADER_OR_FOLLOWER when a truncation cut those records (another
 * leader's log won), or REQUEST_TIMED_OUT after timeout_ms (the followers
 * did not fetch them: this node may no longer lead, or has no ISR). Polls;
 * takes no lock the replica layer needs. epoch -1 (a log without epochs)
 * only waits for the high watermark. */
int16_t partition_log_wait_replicated(struct partition_log *log, int32_t epoch, int64_t end, int64_t timeout_ms);

/* Ends every wait_replicated on log, now and later, with REQUEST_TIMED_OUT:
 * a stopping broker's followers may be gone, and its in-flight requests
 * must not hold the shutdown for the wait's timeout. */
void partition_log_cancel_replication_waits(struct partition_log *log);
/* At load: the high watermark from replication-offset-checkpoint, clamped to
 * [log start, log end]; the log stops tracking its end until the replica
 * layer says otherwise (partition_log_set_high_watermark_tracks_end). */
void partition_log_restore_high_watermark(struct partition_log *log, int64_t offset);
int64_t partition_log_size_bytes(struct partition_log *log);
int64_t partition_log_recovery_point(struct partition_log *log);
int partition_log_segment_count(struct partition_log *log);
const char *partition_log_dir(const struct partition_log *log);
bool partition_log_is_offline(struct partition_log *log);

/* Replace the log's configuration (a topic config was altered). Takes effect
 * for the next append, roll, flush and retention pass; existing segments are
 * not rewritten. Returns true when any setting differed. */
bool partition_log_set_config(struct partition_log *log, const struct log_config *cfg);
/* A copy of the configuration in effect. */
void partition_log_get_config(struct partition_log *log, struct log_config *out);

/* First record with timestamp >= ts: its offset and timestamp, or -1/-1.
 * Compressed batches are opened; one whose records cannot be read answers
 * with its base offset and max timestamp. */
int16_t partition_log_offset_for_timestamp(struct partition_log *log, int64_t ts, int64_t *offset, int64_t *timestamp);
/* Largest timestamp in the log and the offset of the first record holding
 * it (of the first batch reaching it), or -1/-1. */
int16_t partition_log_max_timestamp(struct partition_log *log, int64_t *offset, int64_t *timestamp);

/* fdatasync everything up to the log end; moves the recovery point. */
int16_t partition_log_flush(struct partition_log *log);
/* As Kafka does after a roll: fdatasync the segments before the newest
 * rolled one, without blocking appends, and move the recovery point to its
 * base offset, so a crash rescans the active segment only (plus anything
 * the flush policy has not written). No-op when nothing rolled. */
int16_t partition_log_flush_rolled(struct partition_log *log);
/* fdatasync the .log files from the recovery point to the log end, without
 * the indexes and without moving the recovery point: the records are
 * durable and, after an unclean stop, recovery rescans them and rebuilds
 * their indexes. One fdatasync instead of three for small appends that must
 * be durable before an answer (coordinator state, transaction markers). */
int16_t partition_log_flush_records(struct partition_log *log);
/* Makes the records below end_offset durable (group commit): returns at
 * once when the recovery point has reached end_offset; otherwise one caller
 * at a time fdatasyncs up to the log end as it finds it, without holding
 * the append lock, so appends go on meanwhile and callers that queued
 * behind that sync usually find their records covered. NONE when the
 * recovery point is >= end_offset on return; KAFKA_STORAGE_ERROR when the
 * log is (or goes) offline; NOT_LEADER_OR_FOLLOWER when a truncation
 * removed records below end_offset. */
int16_t partition_log_flush_to(struct partition_log *log, int64_t end_offset);
/* Flush when flush.ms has passed since the oldest unflushed append. */
int16_t partition_log_flush_if_due(struct partition_log *log, int64_t now_ms);
/* Drop every batch holding offsets >= offset (the log may end below it when
 * offset falls inside a batch). At or past the log end no batch goes, but
 * a leader epoch entry starting at the log end does (as in Kafka). */
int16_t partition_log_truncate_to(struct partition_log *log, int64_t offset);
/* A follower behind the leader's log start (Kafka's truncateFullyAndStartAt):
 * drop every segment, the leader epochs and the producer state, and start
 * an empty log at offset (log start, log end and high watermark). */
int16_t partition_log_truncate_fully_and_start_at(struct partition_log *log, int64_t offset);
/* Move the log start offset forward (DeleteRecords); removes whole segments
 * below it, as retention does. OFFSET_OUT_OF_RANGE when offset > log end or
 * negative; an offset at or below the start changes nothing. Below the
 * local start (tiered storage) it moves the whole log's start only; the
 * remote log manager then deletes the remote segments below it. */
int16_t partition_log_delete_records_before(struct partition_log *log, int64_t offset);
/* Delete closed segments past retention.ms / retention.bytes; returns the
 * number of segments deleted. */
int partition_log_apply_retention(struct partition_log *log, int64_t now_ms);
/* Roll the active segment when segment.ms has passed. Returns 1 if rolled. */
int partition_log_roll_if_due(struct partition_log *log, int64_t now_ms);
/* Set log start from a checkpoint (never moves it backwards). */
void partition_log_restore_start_offset(struct partition_log *log, int64_t offset);

/* Tiered storage (core/tiered). A closed local segment as the remote log
 * manager sees it; files are <dir>/<20-digit base_offset>.<ext>. */
struct log_segment_info {
    int64_t base_offset;
    int64_t next_offset; /* last offset + 1 */
    int64_t size;
    int64_t max_timestamp; /* -1 when empty */
    bool has_txn_index;
};
/* Every segment but the active one, oldest first (free() *out). Returns 0
 * or ENOMEM. */
int partition_log_closed_segments(struct partition_log *log, struct log_segment_info **out, size_t *count);
/* The remote log's state: remote_start is the first offset held remotely
 * (-1: none), copied_end the offset below which every closed segment's copy
 * is confirmed (-1: none). With remote.storage.enable, retention deletes a
 * local segment only when it ends at or below copied_end, and by
 * local.retention.* instead of retention.*. */
void partition_log_set_remote_offsets(struct partition_log *log, int64_t remote_start, int64_t copied_end);
/* Compacted tiered topics: the cleaner and the copier agree through the log.
 * Before copying a closed segment the copier claims it: under the write
 * lock, info (found by base_offset) is refreshed from the live segment and
 * the claim raises the tier floor to its end. A compacted log's segment is
 * claimable only once the cleaner has cleaned it (it ends at or below the
 * cleaner's first dirty offset). The cleaner never rewrites a segment below
 * the floor, and drops a pass whose swap would. Returns 0, EAGAIN (not
 * cleaned yet) or ENOENT (no such closed segment any more). */
int partition_log_claim_for_copy(struct partition_log *log, struct log_segment_info *info);
/* max(copied_end, the last claim's end): offsets below it are the copier's;
 * -1 when none. */
int64_t partition_log_tier_floor(struct partition_log *log);
/* copied_end as last set; -1 when nothing is tiered. */
int64_t partition_log_remote_copied_end(struct partition_log *log);
/* A DeleteRecords start below the local start, -1 when none; the remote
 * log manager persists it and restores it with
 * partition_log_delete_records_before. */
int64_t partition_log_remote_floor(struct partition_log *log);

/* partition.metadata: topic id (16 bytes). */
int partition_log_write_metadata(struct partition_log *log, const uint8_t topic_id[16]);
/* 0 and the id, or -1 when the file is missing or malformed. */
int partition_log_topic_id(struct partition_log *log, uint8_t topic_id[16]);

/* Leader epoch cache (log/leader_epoch_cache.h, kept in
 * leader-epoch-checkpoint). Appends add an entry when a batch starts a newer
 * epoch; truncation and start-offset moves trim it. */
/* The latest epoch with data, -1 when none. */
int32_t partition_log_latest_epoch(struct partition_log *log);
/* Kafka's endOffsetFor against the log end (see
 * leader_epoch_cache_end_offset_for): the end offset of epoch, and in
 * *found_epoch the epoch it belongs to; -1 and -1 when undefined. For
 * OffsetForLeaderEpoch. */
int64_t partition_log_end_offset_for_epoch(struct partition_log *log, int32_t epoch, int32_t *found_epoch);
/* This broker leads the partition at leader_epoch: as Kafka does when a
 * replica becomes leader, the epoch starts at the log end, so
 * OffsetForLeaderEpoch knows it before any record is written in it.
 * Nothing changes (and nothing is written) when it is already the latest
 * epoch. Returns KAFKA_ERR_NONE or KAFKA_STORAGE_ERROR. */
int16_t partition_log_assign_leader_epoch(struct partition_log *log, int32_t leader_epoch);
/* A copy of the cache's entries (free() *out). Returns 0 or ENOMEM. */
struct leader_epoch_entry;
int partition_log_epoch_entries(struct partition_log *log, struct leader_epoch_entry **out, size_t *count);

/* Idempotent producer state (see log/producer_state.h). Appends check it:
 * a retried batch is answered with its original offsets and not written. */
/* Drop producers idle longer than producer.id.expiration.ms; returns how many. */
int partition_log_expire_producers(struct partition_log *log, int64_t now_ms);
/* Copy of the producer's entry; false when unknown. */
bool partition_log_producer_lookup(struct partition_log *log, int64_t producer_id, struct producer_entry *out);
size_t partition_log_producer_count(struct partition_log *log);
/* Copies of every producer entry (free() *out). Returns 0 or ENOMEM. */
int partition_log_list_producers(struct partition_log *log, struct producer_entry **out, size_t *count);

/* Transactions. A producer's first transactional batch opens its
 * transaction at that batch's base offset; a marker ends it. */
/* Append a COMMIT or ABORT control batch for the producer's open
 * transaction; *offset_out gets its offset. When the producer has no open
 * transaction (a retried marker) nothing is written: KAFKA_ERR_NONE with
 * *offset_out -1. INVALID_PRODUCER_EPOCH for an epoch older than the
 * producer's, TRANSACTION_COORDINATOR_FENCED for an older coordinator epoch.
 * leader_epoch < 0: leave partitionLeaderEpoch unset. */
int16_t partition_log_append_txn_marker(struct partition_log *log, int64_t producer_id, int16_t producer_epoch,
                                        int32_t coordinator_epoch, bool commit, int32_t leader_epoch,
                                        int64_t *offset_out);
/* Last stable offset: the first offset of the oldest open transaction (but
 * not below the log start), else the high watermark; never above it. */
int64_t partition_log_last_stable_offset(struct partition_log *log);
/* Kafka's collectAbortedTransactions: aborted transactions whose marker is
 * at or after fetch_offset and whose first offset is below
 * upper_bound_offset, in marker order. fn (may be NULL) runs under the
 * log's read lock; returns the count. */
size_t partition_log_aborted_txns(struct partition_log *log, int64_t fetch_offset, int64_t upper_bound_offset,
                                  void (*fn)(void *arg, int64_t producer_id, int64_t first_offset), void *arg);

#endif
