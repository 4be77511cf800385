/* The coordinator's background work: completing transactions with markers,
 * aborting timed-out transactions, forgetting expired ids; the thread that
 * runs them; and the read-only views for Describe/ListTransactions. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coordinator/coordinator_runtime.h"
#include "protocol/generated/errors.h"
#include "txn/txn_coordinator_internal.h"
#include "util/clock.h"
#include "util/logger.h"

/* How soon failed marker writes are tried again. */
#define MARKER_RETRY_MS 500

/* Copies what write_markers needs so the lock can be dropped. */
static struct txn_marker_partition *marker_parts(const struct txn_entry *e)
{
    struct txn_marker_partition *parts = calloc(e->part_count + 1, sizeof *parts);
    if (!parts)
        return NULL;
    for (size_t i = 0; i < e->part_count; i++) {
        parts[i].topic = strdup(e->parts[i].topic);
        parts[i].partition = e->parts[i].partition;
        parts[i].error_code = KAFKA_ERR_NONE;
        if (!parts[i].topic) {
            for (size_t j = 0; j < i; j++)
                free((char *)parts[j].topic);
            free(parts);
            return NULL;
        }
    }
    return parts;
}

static void free_marker_parts(struct txn_marker_partition *parts, size_t count)
{
    for (size_t i = 0; parts && i < count; i++)
        free((char *)parts[i].topic);
    free(parts);
}

static bool marker_written(int16_t code)
{
    /* A partition that is gone needs no marker (Kafka treats it so). */
    return code == KAFKA_ERR_NONE || code == KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION;
}

/* Kafka resends only the markers still missing: the partitions written
 * leave the entry's pending list. The Prepare record keeps them all, so a
 * reload resends every one, which a partition takes as a no-op. Caller
 * holds the lock. */
static void drop_written_parts(struct txn_entry *e, const struct txn_marker_partition *parts, size_t count)
{
    size_t kept = 0;
    for (size_t i = 0; i < e->part_count; i++) {
        bool written = false;
        for (size_t j = 0; j < count && !written; j++)
            written = marker_written(parts[j].error_code) && parts[j].partition == e->parts[i].partition &&
                      strcmp(parts[j].topic, e->parts[i].topic) == 0;
        if (written)
            free(e->parts[i].topic);
        else
            e->parts[kept++] = e->parts[i];
    }
    e->part_count = kept;
}

/* Writes the Complete record once every marker is in. Caller holds the lock. */
static bool finish(struct txn_coordinator *c, struct txn_entry *e)
{
    enum txn_state done = e->state == TXN_STATE_PREPARE_COMMIT ? TXN_STATE_COMPLETE_COMMIT : TXN_STATE_COMPLETE_ABORT;
    int64_t now = txn_now(c);
    int16_t code = txn_persist(c, e, e->producer_id, e->producer_epoch, done, NULL, 0, e->start_ms, now);
    if (code != KAFKA_ERR_NONE) {
        logger_warn("txn", "%s: cannot record %s (error %d); will retry", e->transactional_id, txn_state_name(done),
                    (int)code);
        return false;
    }
    txn_set_state(e, done);
    txn_clear_parts(e);
    e->last_update_ms = now;
    e->markers_pending = false;
    return true;
}

int txn_coordinator_complete_pending(struct txn_coordinator *c)
{
    int completed = 0;
    pthread_mutex_lock(&c->lock);
    if (!c->opts.markers || !c->opts.markers->write_markers) {
        pthread_mutex_unlock(&c->lock);
        return 0; /* markers unavailable: transactions stay in Prepare* */
    }
    /* One pass: entries tried this pass are flagged in_flight until done,
     * so a failed one is not retried in a loop. */
    size_t tried_cap = c->count, tried_n = 0;
    struct txn_entry **tried = calloc(tried_cap + 1, sizeof *tried);
    if (!tried) {
        pthread_mutex_unlock(&c->lock);
        return 0;
    }
    for (;;) {
        struct txn_entry *e = NULL;
        for (size_t i = 0; i < c->count && !e; i++) {
            struct txn_entry *cand = c->entries[i];
            /* A partition no longer led here: its unload is on the way. */
            if (!cand->markers_pending || cand->markers_in_flight || !txn_entry_active(c, cand))
                continue;
            bool seen = false;
            for (size_t j = 0; j < tried_n && !seen; j++)
                seen = tried[j] == cand;
            if (!seen)
                e = cand;
        }
        if (!e || tried_n == tried_cap)
            break;
        tried[tried_n++] = e;
        struct txn_marker_partition *parts = marker_parts(e);
        if (!parts)
            continue;
        size_t count = e->part_count;
        int64_t producer_id = e->producer_id;
        int16_t epoch = e->producer_epoch;
        bool commit = e->state == TXN_STATE_PREPARE_COMMIT;
        int32_t coordinator_epoch = txn_entry_epoch(c, e);
        e->markers_in_flight = true;
        pthread_mutex_unlock(&c->lock);
        int16_t rc = c->opts.markers->write_markers(c->opts.markers_ctx, producer_id, epoch, coordinator_epoch, commit,
                                                    parts, count);
        pthread_mutex_lock(&c->lock);
        e->markers_in_flight = false;
        pthread_cond_broadcast(&c->marker_done);
        bool all = true;
        for (size_t i = 0; i < count; i++)
            all &= marker_written(parts[i].error_code);
        if (rc == KAFKA_ERR_NONE || all) {
            if (finish(c, e))
                completed++;
        } else {
            drop_written_parts(e, parts, count);
            logger_warn("txn", "%s: %s markers of %zu partition(s) not written yet (error %d); will retry",
                        e->transactional_id, commit ? "commit" : "abort", e->part_count, (int)rc);
        }
        free_marker_parts(parts, count);
    }
    free(tried);
    pthread_mutex_unlock(&c->lock);
    return completed;
}

int txn_coordinator_abort_timed_out(struct txn_coordinator *c)
{
    int aborted = 0;
    pthread_mutex_lock(&c->lock);
    int64_t now = txn_now(c);
    for (size_t i = 0; c->loaded && i < c->count; i++) {
        struct txn_entry *e = c->entries[i];
        if (e->state != TXN_STATE_ONGOING || e->markers_in_flight || e->start_ms < 0 || !txn_entry_active(c, e) ||
            now - e->start_ms <= (int64_t)e->timeout_ms)
            continue;
        logger_info("txn", "%s: transaction of producer %" PRId64 " epoch %d timed out after %" PRId64 " ms: aborting",
                    e->transactional_id, e->producer_id, (int)e->producer_epoch, now - e->start_ms);
        if (txn_fence_and_abort(c, e, now) == KAFKA_ERR_NONE)
            aborted++;
    }
    pthread_mutex_unlock(&c->lock);
    return aborted;
}

int txn_coordinator_expire_ids(struct txn_coordinator *c)
{
    int removed = 0;
    pthread_mutex_lock(&c->lock);
    int64_t now = txn_now(c);
    for (size_t i = 0; c->loaded && i < c->count; i++) {
        struct txn_entry *e = c->entries[i];
        bool idle = e->state == TXN_STATE_EMPTY || e->state == TXN_STATE_COMPLETE_COMMIT ||
                    e->state == TXN_STATE_COMPLETE_ABORT;
        if (!idle || e->markers_pending || e->markers_in_flight || !txn_entry_active(c, e) ||
            now - e->last_update_ms < c->opts.id_expiration_ms)
            continue;
        int16_t code = c->opts.log ? txn_log_write(c->opts.log, e->transactional_id, NULL) : KAFKA_ERR_NONE;
        if (code != KAFKA_ERR_NONE) {
            logger_warn("txn", "%s: cannot write its removal (error %d)", e->transactional_id, (int)code);
            continue;
        }
        logger_info("txn", "%s: expired after %" PRId64 " ms idle", e->transactional_id, now - e->last_update_ms);
        txn_set_state(e, TXN_STATE_DEAD);
        txn_remove_at(c, i--);
        removed++;
    }
    pthread_mutex_unlock(&c->lock);
    return removed;
}

static void view_of(const struct txn_entry *e, struct txn_view *v)
{
    *v = (struct txn_view){
        .transactional_id = e->transactional_id,
        .producer_id = e->producer_id,
        .producer_epoch = e->producer_epoch,
        .state = e->state,
        .timeout_ms = e->timeout_ms,
        .start_ms = e->start_ms,
        .last_update_ms = e->last_update_ms,
        .partitions = e->parts,
        .partition_count = e->part_count,
    };
}

int16_t txn_coordinator_describe(struct txn_coordinator *c, const char *transactional_id, txn_view_fn visit, void *ctx)
{
    pthread_mutex_lock(&c->lock);
    int16_t code = txn_serving(c, transactional_id);
    struct txn_entry *e = code == KAFKA_ERR_NONE ? txn_find(c, transactional_id, NULL) : NULL;
    if (code == KAFKA_ERR_NONE && !e)
        code = KAFKA_ERR_TRANSACTIONAL_ID_NOT_FOUND;
    if (e) {
        struct txn_view v;
        view_of(e, &v);
        visit(ctx, &v);
    }
    pthread_mutex_unlock(&c->lock);
    return code;
}

int16_t txn_coordinator_list(struct txn_coordinator *c, txn_view_fn visit, void *ctx)
{
    pthread_mutex_lock(&c->lock);
    if (!c->loaded || (c->opts.shards && coordinator_shards_any_loading(c->opts.shards))) {
        pthread_mutex_unlock(&c->lock);
        return KAFKA_ERR_COORDINATOR_LOAD_IN_PROGRESS;
    }
    for (size_t i = 0; i < c->count; i++) {
        struct txn_view v;
        view_of(c->entries[i], &v);
        visit(ctx, &v);
    }
    pthread_mutex_unlock(&c->lock);
    return KAFKA_ERR_NONE;
}

static bool any_pending(struct txn_coordinator *c)
{
    for (size_t i = 0; i < c->count; i++)
        if (c->entries[i]->markers_pending)
            return true;
    return false;
}

static void *txn_thread_main(void *arg)
{
    struct txn_coordinator *c = arg;
    int64_t next_abort = clock_mono_ms() + c->opts.abort_check_interval_ms;
    int64_t next_expire = clock_mono_ms() + c->opts.expiration_check_interval_ms;
    pthread_mutex_lock(&c->lock);
    while (!c->stopping) {
        bool markers = c->work_due;
        c->work_due = false;
        pthread_mutex_unlock(&c->lock);
        if (markers)
            txn_coordinator_complete_pending(c);
        int64_t now = clock_mono_ms();
        if (now >= next_abort) {
            if (txn_coordinator_abort_timed_out(c) > 0)
                txn_coordinator_complete_pending(c);
            next_abort = now + c->opts.abort_check_interval_ms;
        }
        if (now >= next_expire) {
            txn_coordinator_expire_ids(c);
            next_expire = now + c->opts.expiration_check_interval_ms;
        }
        pthread_mutex_lock(&c->lock);
        if (c->stopping || c->work_due)
            continue;
        int64_t until = next_abort < next_expire ? next_abort : next_expire;
        /* Markers that failed (or were skipped while their partition
         * loaded) are retried at the next wake, at most MARKER_RETRY_MS
         * away. Only waking early used to retry them: with an abort check
         * due sooner than that, none ever was, and the transaction stayed
         * in Prepare* with every InitProducerId answered
         * CONCURRENT_TRANSACTIONS. */
        if (any_pending(c) && c->opts.markers) {
            if (until > now + MARKER_RETRY_MS)
                until = now + MARKER_RETRY_MS;
            c->work_due = true;
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t wait_ms = until - clock_mono_ms();
        if (wait_ms < 1)
            wait_ms = 1;
        ts.tv_sec += (time_t)(wait_ms / 1000);
        ts.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        bool retry = c->work_due;
        c->work_due = false;
        int rc = 0;
        while (!c->stopping && !c->work_due && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&c->wake, &c->lock, &ts);
        c->work_due |= retry;
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

int txn_thread_start(struct txn_coordinator *c, char *err, size_t errlen)
{
    int rc = pthread_create(&c->thread, NULL, txn_thread_main, c);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the transaction coordinator thread: %s", strerror(rc));
        return -1;
    }
    c->thread_started = true;
    return 0;
}

void txn_thread_stop(struct txn_coordinator *c)
{
    if (!c->thread_started)
        return;
    pthread_mutex_lock(&c->lock);
    c->stopping = true;
    pthread_cond_signal(&c->wake);
    pthread_mutex_unlock(&c->lock);
    pthread_join(c->thread, NULL);
    c->thread_started = false;
}
