/* Transaction verification guards (KIP-890 part 1, Kafka's
 * VerificationGuard). A leader asks the transaction coordinator whether a
 * partition is in a producer's transaction before that producer's first
 * transactional batch opens one here. The answer may be stale by the time
 * the batch is appended: the transaction may have ended (its marker
 * written) meanwhile. The guard taken before asking is what the append
 * must present; a marker ends it, so a verification from before the
 * marker cannot open a transaction the coordinator no longer knows. */
#include "log/partition_log_internal.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/generated/errors.h"
#include "util/lock_check.h"

/* Bounds the table against producers that begin verifications and never
 * append: past it the oldest guard is dropped (its append then fails
 * verification, and the producer aborts). */
#define VERIFY_GUARDS_MAX 1024

struct txn_verify_guard {
    int64_t producer_id;
    uint64_t guard;
};

/* Process-wide, so a guard never repeats, whichever log gave it. */
static _Atomic uint64_t next_guard = 1;

static struct txn_verify_guard *find_guard(struct partition_log *log, int64_t producer_id)
{
    for (size_t i = 0; i < log->verify_guard_count; i++)
        if (log->verify_guards[i].producer_id == producer_id)
            return &log->verify_guards[i];
    return NULL;
}

void partition_log_clear_verification_locked(struct partition_log *log, int64_t producer_id)
{
    LOCK_ASSERT_HELD(&log->write_lock);
    struct txn_verify_guard *g = find_guard(log, producer_id);
    if (!g)
        return;
    size_t i = (size_t)(g - log->verify_guards);
    memmove(g, g + 1, (log->verify_guard_count - i - 1) * sizeof *g);
    log->verify_guard_count--;
}

static bool txn_open(struct partition_log *log, int64_t producer_id)
{
    const struct producer_entry *e = log->producers ? producer_state_get(log->producers, producer_id) : NULL;
    return e && e->current_txn_first_offset >= 0;
}

static int16_t add_guard(struct partition_log *log, int64_t producer_id, uint64_t *guard)
{
    if (log->verify_guard_count == VERIFY_GUARDS_MAX) {
        memmove(log->verify_guards, log->verify_guards + 1, (VERIFY_GUARDS_MAX - 1) * sizeof *log->verify_guards);
        log->verify_guard_count--;
    }
    if (log->verify_guard_count == log->verify_guard_cap) {
        size_t cap = log->verify_guard_cap ? log->verify_guard_cap * 2 : 4;
        struct txn_verify_guard *g = realloc(log->verify_guards, cap * sizeof *g);
        if (!g)
            return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
        log->verify_guards = g;
        log->verify_guard_cap = cap;
    }
    *guard = atomic_fetch_add(&next_guard, 1);
    log->verify_guards[log->verify_guard_count++] = (struct txn_verify_guard){producer_id, *guard};
    return KAFKA_ERR_NONE;
}

int16_t partition_log_txn_verification_start(struct partition_log *log, int64_t producer_id, uint64_t *guard)
{
    *guard = 0;
    if (partition_log_ensure_loaded(log) != 0)
        return KAFKA_ERR_KAFKA_STORAGE_ERROR;
    pthread_mutex_lock(&log->write_lock);
    int16_t code = KAFKA_ERR_NONE;
    struct txn_verify_guard *g = txn_open(log, producer_id) ? NULL : find_guard(log, producer_id);
    if (g)
        *guard = g->guard;
    else if (!txn_open(log, producer_id))
        code = add_guard(log, producer_id, guard);
    pthread_mutex_unlock(&log->write_lock);
    return code;
}

int16_t partition_log_check_verification_locked(struct partition_log *log, const uint8_t *batches, size_t len,
                                                const uint64_t *guard, struct log_append_result *res)
{
    LOCK_ASSERT_HELD(&log->write_lock);
    struct record_batch_header h;
    /* A transactional produce carries one batch (checked before). */
    if (record_batch_parse_header(batches, len, &h) != 0 || !record_batch_is_transactional(&h) ||
        record_batch_is_control(&h) || h.producer_id < 0 || txn_open(log, h.producer_id))
        return KAFKA_ERR_NONE;
    const struct txn_verify_guard *g = find_guard(log, h.producer_id);
    if (*guard == 0 || !g || g->guard != *guard) {
        snprintf(res->error_message, sizeof res->error_message,
                 "producer %" PRId64 ": record was not part of an ongoing transaction", h.producer_id);
        return KAFKA_ERR_INVALID_TXN_STATE;
    }
    /* The batch opens the transaction; from here a marker ends it. */
    partition_log_clear_verification_locked(log, h.producer_id);
    return KAFKA_ERR_NONE;
}
