/* State shared by the coordinator's files: requests (txn_coordinator.c) and
 * background work (txn_coordinator_bg.c). */
#ifndef CAIRN_TXN_TXN_COORDINATOR_INTERNAL_H
#define CAIRN_TXN_TXN_COORDINATOR_INTERNAL_H

#include <pthread.h>

#include "txn/txn_coordinator.h"

/* One transactional id. Guarded by the coordinator's lock; individually
 * allocated so a pointer stays valid while the lock is dropped for marker
 * writes (an entry in Prepare* is never freed before destroy). */
struct txn_entry {
    char *transactional_id;
    int64_t producer_id;
    int64_t last_producer_id; /* before an id change on epoch exhaustion; -1 when none */
    int16_t producer_epoch;
    int16_t last_producer_epoch; /* the epoch before the last bump; -1 when none */
    int32_t timeout_ms;
    enum txn_state state;
    struct txn_topic_partition *parts; /* owned: topic strings too */
    size_t part_count, part_cap;
    int64_t start_ms;
    int64_t last_update_ms;
    bool markers_pending;   /* Prepare*: markers still to write */
    bool markers_in_flight; /* being written with the lock dropped */
    int32_t partition;      /* of __transaction_state with shards; -1 otherwise */
};

struct txn_coordinator {
    struct txn_coordinator_options opts;
    pthread_mutex_t lock;
    pthread_cond_t wake;        /* signalled when markers are due or on stop */
    pthread_cond_t marker_done; /* broadcast when an entry leaves markers_in_flight */
    bool loaded;
    bool stopping;
    bool work_due;
    bool thread_started;
    pthread_t thread;
    struct txn_entry **entries; /* sorted by transactional_id */
    size_t count, cap;
};

int64_t txn_now(struct txn_coordinator *c);
/* Whether e's partition is served (always, without shards). */
bool txn_entry_active(struct txn_coordinator *c, const struct txn_entry *e);
int32_t txn_entry_epoch(struct txn_coordinator *c, const struct txn_entry *e);
/* Checks shared by every request on id: NONE or the error to answer with.
 * Caller holds the lock. */
int16_t txn_serving(struct txn_coordinator *c, const char *id);
struct txn_entry *txn_find(struct txn_coordinator *c, const char *id, size_t *at);
void txn_remove_at(struct txn_coordinator *c, size_t at);
/* Persists the entry as it would be with these fields changed. */
int16_t txn_persist(struct txn_coordinator *c, const struct txn_entry *e, int64_t producer_id, int16_t epoch,
                    enum txn_state state, const struct txn_topic_partition *parts, size_t part_count, int64_t start_ms,
                    int64_t now);
void txn_clear_parts(struct txn_entry *e);
void txn_entry_free(struct txn_entry *e);
/* Moves an Ongoing entry to PrepareAbort under epoch + 1, fencing the
 * producer, and queues its markers. Caller holds the lock. */
int16_t txn_fence_and_abort(struct txn_coordinator *c, struct txn_entry *e, int64_t now);
void txn_signal(struct txn_coordinator *c);

/* txn_state.c: transitions, checked against Kafka's table of valid previous
 * states. txn_check_transition answers NONE, or INVALID_TXN_STATE with an
 * error log (and an assert in debug builds); txn_persist asks it before
 * writing, so an illegal state never reaches the log. txn_set_state is the
 * one way an entry's state changes (callers hold the lock). */
bool txn_state_can_follow(enum txn_state from, enum txn_state to);
int16_t txn_check_transition(const struct txn_entry *e, enum txn_state to);
int16_t txn_set_state(struct txn_entry *e, enum txn_state to);

int txn_thread_start(struct txn_coordinator *c, char *err, size_t errlen);
void txn_thread_stop(struct txn_coordinator *c);

#endif
