/* Idempotent producer state of one partition: for each producer id its
 * epoch and the metadata of its last PRODUCER_STATE_CACHED_BATCHES batches,
 * used to reject stale epochs and sequence gaps and to answer retried
 * batches with their original offsets instead of writing them twice.
 *
 * Thread-safety: none of its own. A partition log owns one and touches it
 * only under its writer mutex, so checking a batch and appending it are one
 * atomic step.
 *
 * Snapshot files (<dir>/<20-digit offset>.snapshot; the offset is the log
 * end the state covers) use the layout of Kafka's producer snapshot
 * version 1, all big-endian:
 *   Version int16 (1) | Crc uint32 (CRC32C of every byte after it) |
 *   Count int32 | Count entries of
 *     ProducerId int64, ProducerEpoch int16, LastSequence int32,
 *     LastOffset int64, OffsetDelta int32 (last - first offset of the batch),
 *     Timestamp int64, CoordinatorEpoch int32, CurrentTxnFirstOffset int64
 * Kafka writes one entry (the last batch) per producer. Cairn writes one
 * entry per cached batch, oldest first, so a reader that keeps the last
 * entry per producer id (Kafka's) sees the same state, while Cairn keeps
 * every cached batch and still recognises retries of older ones after a
 * restart. An entry with LastOffset -1 carries an epoch and no batch. */
#ifndef CAIRN_LOG_PRODUCER_STATE_H
#define CAIRN_LOG_PRODUCER_STATE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/record_batch.h"

#define PRODUCER_STATE_CACHED_BATCHES 5
#define PRODUCER_STATE_SNAPSHOT_VERSION 1

struct producer_batch_meta {
    int32_t first_seq;
    int32_t last_seq;
    int64_t first_offset;
    int64_t last_offset;
    int64_t timestamp; /* the batch's max timestamp */
};

struct producer_entry {
    int64_t producer_id;
    int16_t epoch;
    /* Oldest first; batch_count <= PRODUCER_STATE_CACHED_BATCHES. */
    struct producer_batch_meta batches[PRODUCER_STATE_CACHED_BATCHES];
    int batch_count;
    int64_t last_timestamp;
    /* Transactions: the epoch of the coordinator that wrote the last marker
     * (-1 before any), and the first offset of the open transaction (-1
     * while none is open). */
    int32_t coordinator_epoch;
    int64_t current_txn_first_offset;
};

struct producer_state;

/* What a check decided for one batch. */
struct producer_check_result {
    bool duplicate;       /* already in the log: write nothing */
    int64_t first_offset; /* the original offsets when duplicate */
    int64_t last_offset;
};

struct producer_state *producer_state_new(void);
void producer_state_free(struct producer_state *ps);
void producer_state_clear(struct producer_state *ps);
size_t producer_state_count(const struct producer_state *ps);
/* NULL when unknown. Valid until the next change. */
const struct producer_entry *producer_state_get(const struct producer_state *ps, int64_t producer_id);

/* Sequence number arithmetic: wraps from INT32_MAX to 0. */
int32_t producer_seq_add(int32_t seq, int32_t delta);

/* Decide whether the batch h (producer_id >= 0) may be appended. Returns
 * KAFKA_ERR_NONE (check res->duplicate), INVALID_PRODUCER_EPOCH,
 * OUT_OF_ORDER_SEQUENCE_NUMBER or UNKNOWN_PRODUCER_ID, with a reason in err.
 * Changes nothing. */
int16_t producer_state_check(const struct producer_state *ps, const struct record_batch_header *h,
                             struct producer_check_result *res, char *err, size_t errlen);

/* Record an appended (or replayed) data batch at [first_offset,
 * last_offset]. A higher epoch forgets the previous epoch's batches. The
 * first transactional batch of a producer opens its transaction at
 * first_offset. Returns 0 or -1 when out of memory. */
int producer_state_update(struct producer_state *ps, const struct record_batch_header *h, int64_t first_offset,
                          int64_t last_offset);

/* Whether a transaction marker from (producer_id, epoch) written by a
 * coordinator at coordinator_epoch may be appended. Returns KAFKA_ERR_NONE
 * with *txn_first_offset the first offset of the open transaction it ends
 * (-1: none open, so nothing to write), INVALID_PRODUCER_EPOCH for an epoch
 * older than the producer's, or TRANSACTION_COORDINATOR_FENCED for an older
 * coordinator epoch; a reason goes to err. Changes nothing. */
int16_t producer_state_check_marker(const struct producer_state *ps, int64_t producer_id, int16_t epoch,
                                    int32_t coordinator_epoch, int64_t *txn_first_offset, char *err, size_t errlen);
/* Record a marker at marker_offset: ends the open transaction, adopts the
 * marker's epoch (a higher one forgets the cached batches) and coordinator
 * epoch. Returns 0 or -1 when out of memory. */
int producer_state_end_txn(struct producer_state *ps, int64_t producer_id, int16_t epoch, int32_t coordinator_epoch,
                           int64_t timestamp);
/* Smallest first offset of the open transactions, or -1 when none is open. */
int64_t producer_state_first_open_txn(const struct producer_state *ps);
/* Calls fn for every producer entry (order unspecified); fn must not change ps. */
void producer_state_foreach(const struct producer_state *ps, void (*fn)(void *arg, const struct producer_entry *e),
                            void *arg);

/* Drop producers idle for longer than expiration_ms (by their last batch
 * timestamp) with no open transaction. Returns the number dropped. */
size_t producer_state_expire(struct producer_state *ps, int64_t now_ms, int64_t expiration_ms);

/* Write the state to path atomically. Returns 0 or an errno value. */
int producer_state_write_snapshot(const struct producer_state *ps, const char *path);
/* Without fsync: the snapshot is checksummed and a lost or torn one only
 * means replaying more of the log at the next start. */
int producer_state_write_snapshot_unsynced(const struct producer_state *ps, const char *path);
/* Replace the state with the snapshot at path. Returns 0, ENOENT, or EINVAL
 * for a malformed or corrupt file (the state is then cleared). */
int producer_state_read_snapshot(struct producer_state *ps, const char *path);

#endif
