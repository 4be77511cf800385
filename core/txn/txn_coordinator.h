/* The transaction coordinator (KIP-98): owns each transactional id's
 * producer id and epoch, the partitions of its open transaction and its
 * state, persists every change to __transaction_state before answering, and
 * completes transactions by having the partitions write COMMIT or ABORT
 * markers (txn_marker_ops).
 *
 * States follow Kafka's: Empty -> Ongoing (AddPartitionsToTxn) ->
 * PrepareCommit/PrepareAbort (EndTxn, durable before the client hears back)
 * -> markers -> CompleteCommit/CompleteAbort. While markers are pending the
 * id answers CONCURRENT_TRANSACTIONS. An Ongoing transaction older than its
 * timeout, or one whose id is re-initialised, is aborted under a bumped
 * epoch, which fences the old producer.
 *
 * Errors are returned as Kafka codes. Epoch mismatches come back as
 * PRODUCER_FENCED; callers answering old API versions translate to
 * INVALID_PRODUCER_EPOCH.
 *
 * Thread-safety: every function may be called from any thread; one mutex
 * guards the state. Log and producer-id writes happen under it; marker
 * writes (which may block on other partitions) happen outside it. */
#ifndef CAIRN_TXN_TXN_COORDINATOR_H
#define CAIRN_TXN_TXN_COORDINATOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "txn/txn_log.h"
#include "txn/txn_markers.h"

struct coordinator_shards;
struct coordinator_shard_ops;
struct txn_coordinator;

struct txn_coordinator_options {
    struct txn_log *log; /* NULL: nothing is persisted (tests) */
    /* NULL: markers unavailable; EndTxn leaves the id in Prepare*. */
    const struct txn_marker_ops *markers;
    void *markers_ctx;
    /* A fresh producer id; returns a Kafka error code. Required. */
    int16_t (*allocate_producer_id)(void *ctx, int64_t *producer_id);
    void *allocate_ctx;
    /* Wall clock for transaction times; NULL means clock_wall_ms. */
    int64_t (*now_ms)(void *ctx);
    void *clock_ctx;
    int32_t max_timeout_ms;               /* transaction.max.timeout.ms; <= 0 means 900000 */
    int64_t id_expiration_ms;             /* transactional.id.expiration.ms; <= 0 means 604800000 */
    int64_t abort_check_interval_ms;      /* transaction.abort.timed.out.transaction.cleanup.interval.ms */
    int64_t expiration_check_interval_ms; /* transaction.remove.expired.transaction.cleanup.interval.ms */
    int32_t coordinator_epoch;            /* passed to write_markers when shards is NULL */
    /* Which __transaction_state partitions are served here (the coordinator
     * runtime loads and unloads them through txn_coordinator_shard_ops; an
     * id's markers carry its partition's coordinator epoch). NULL: every id
     * is served after txn_coordinator_load. Not owned. */
    struct coordinator_shards *shards;
    /* true: a thread completes markers as soon as a transaction ends and
     * runs the timeout and expiration checks at their intervals. false: the
     * caller drives txn_coordinator_complete_pending and friends (tests). */
    bool background_thread;
};

int txn_coordinator_create(const struct txn_coordinator_options *opts, struct txn_coordinator **out, char *err,
                           size_t errlen);

/* Replays the log into memory (nothing to replay without a log), then
 * serves requests; transactions found in Prepare* get their markers. Until
 * it returns, requests answer COORDINATOR_LOAD_IN_PROGRESS. */
int txn_coordinator_load(struct txn_coordinator *c, char *err, size_t errlen);

/* The coordinator runtime's hooks (ctx = the coordinator): load replays one
 * __transaction_state partition, then queues the markers of its prepared
 * transactions; unload drops that partition's ids (after any marker write
 * in flight for one of them returns). */
const struct coordinator_shard_ops *txn_coordinator_shard_ops(void);

/* The coordinator epoch the id's markers carry: its partition's leader
 * epoch (-1 when not led here), or opts.coordinator_epoch without shards. */
int32_t txn_coordinator_epoch_for(struct txn_coordinator *c, const char *transactional_id);

/* Stops the thread and frees everything; the log stays the caller's. */
void txn_coordinator_destroy(struct txn_coordinator *c);

/* Whether this broker coordinates the id (FindCoordinator): NONE,
 * NOT_COORDINATOR, or COORDINATOR_NOT_AVAILABLE (loading, log offline). */
int16_t txn_coordinator_ownership(struct txn_coordinator *c, const char *transactional_id);

/* InitProducerId with a transactional id. expected_producer_id/epoch are
 * -1 unless the producer presents them (v3+, KIP-360). May answer
 * CONCURRENT_TRANSACTIONS after starting to abort an open transaction: the
 * client retries. */
int16_t txn_coordinator_init_producer(struct txn_coordinator *c, const char *transactional_id, int32_t timeout_ms,
                                      int64_t expected_producer_id, int16_t expected_epoch, int64_t *producer_id,
                                      int16_t *producer_epoch);

/* Adds partitions to the id's transaction, starting one if none is open. */
int16_t txn_coordinator_add_partitions(struct txn_coordinator *c, const char *transactional_id, int64_t producer_id,
                                       int16_t producer_epoch, const struct txn_topic_partition *parts, size_t count);

/* AddPartitionsToTxn v4 verify_only: the transaction-level error, or NONE
 * with part_errors[i] NONE for partitions in the open transaction and
 * INVALID_TXN_STATE for the others. */
int16_t txn_coordinator_verify_partitions(struct txn_coordinator *c, const char *transactional_id, int64_t producer_id,
                                          int16_t producer_epoch, const struct txn_topic_partition *parts, size_t count,
                                          int16_t *part_errors);

/* EndTxn: writes PrepareCommit/PrepareAbort and returns; markers follow. */
int16_t txn_coordinator_end(struct txn_coordinator *c, const char *transactional_id, int64_t producer_id,
                            int16_t producer_epoch, bool commit);

/* Writes the markers of transactions in Prepare* and records their
 * completion. Returns how many completed. */
int txn_coordinator_complete_pending(struct txn_coordinator *c);
/* Aborts (with an epoch bump) Ongoing transactions past their timeout.
 * Returns how many it started to abort. */
int txn_coordinator_abort_timed_out(struct txn_coordinator *c);
/* Forgets ids with no open transaction idle longer than the expiration.
 * Returns how many it removed. */
int txn_coordinator_expire_ids(struct txn_coordinator *c);

/* A read-only view of one id, valid during the visitor call only. */
struct txn_view {
    const char *transactional_id;
    int64_t producer_id;
    int16_t producer_epoch;
    enum txn_state state;
    int32_t timeout_ms;
    int64_t start_ms;
    int64_t last_update_ms;
    const struct txn_topic_partition *partitions;
    size_t partition_count;
};
typedef void (*txn_view_fn)(void *ctx, const struct txn_view *view);

/* Calls visit for the id: NONE, TRANSACTIONAL_ID_NOT_FOUND, or an ownership
 * error. Visitors run under the coordinator's lock and must not call it. */
int16_t txn_coordinator_describe(struct txn_coordinator *c, const char *transactional_id, txn_view_fn visit, void *ctx);
/* Visits every known id; COORDINATOR_LOAD_IN_PROGRESS while loading. */
int16_t txn_coordinator_list(struct txn_coordinator *c, txn_view_fn visit, void *ctx);

/* The coordinator's clock (for duration filters). */
int64_t txn_coordinator_now_ms(struct txn_coordinator *c);

/* Kafka's names ("Ongoing", "PrepareCommit", ...); -1 when unknown. */
const char *txn_state_name(enum txn_state state);
int txn_state_from_name(const char *name, size_t len);

#endif
