/* Transactions as one cleaner pass sees them (Kafka's cleaner rules): which
 * data batches belong to aborted transactions, and which COMMIT/ABORT
 * markers may go.
 *
 * Batches are fed in offset order, from the log start, through the whole
 * pass (transactions span segments). A data batch of an aborted transaction
 * is discarded; an ABORT marker may go when the pass met no batch of its
 * transaction, a COMMIT marker when the pass met no transactional batch of
 * its producer since the previous marker, and either only once the delete
 * horizon of its segment has passed. The entries of ABORT markers that go
 * are collected for the swap to take out of the .txnindex files and the
 * aborted list.
 *
 * Thread-safety: none; owned by the thread running the pass. */
#ifndef CAIRN_LOG_LOG_CLEAN_TXN_H
#define CAIRN_LOG_LOG_CLEAN_TXN_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log/txn_index.h"
#include "protocol/record_batch.h"

/* An aborted transaction the walk is inside of. */
struct clean_txn_open {
    struct txn_index_entry entry;
    bool seen; /* a batch of it was met by this pass */
};

struct clean_txn {
    struct txn_index_entry *pending; /* aborted, by first offset, from next_pending on */
    size_t pending_count, next_pending;
    struct clean_txn_open *open; /* aborted transactions under way */
    size_t open_count, open_cap;
    int64_t *committing; /* producers with a live transactional batch met */
    size_t committing_count, committing_cap;
    struct txn_index gone; /* entries of ABORT markers dropped, marker order */
    bool keep_markers;     /* part of the log was not walked: drop none */
};

/* aborted[0..n): the aborted transactions that start in the cleaned range.
 * Returns 0 or ENOMEM. */
int clean_txn_init(struct clean_txn *t, const struct txn_index_entry *aborted, size_t n);
void clean_txn_free(struct clean_txn *t);

/* A data batch: *aborted is set when it belongs to an aborted transaction of
 * its producer. Returns 0 or ENOMEM. */
int clean_txn_data_batch(struct clean_txn *t, const struct record_batch_header *h, bool *aborted);
/* A control batch (bytes batch[0..len)). horizon_passed: delete.retention.ms
 * has passed for its segment. *drop is set when it goes. Returns 0 or
 * ENOMEM. */
int clean_txn_control_batch(struct clean_txn *t, const struct record_batch_header *h, const uint8_t *batch, size_t len,
                            bool horizon_passed, bool *drop);

/* The segment being walked is kept as it was: forget the markers dropped
 * since mark (gone.count when its walk began); when unwalked bytes remain,
 * keep every later marker too (their transactions were not all seen). */
void clean_txn_segment_kept(struct clean_txn *t, size_t mark, bool unwalked);

#endif
