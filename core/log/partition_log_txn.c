/* Transactions on one partition: COMMIT/ABORT control batches, the last
 * stable offset, the aborted-transaction list behind read_committed fetches
 * and its .txnindex files, and their rebuild after an unclean stop. */
#include "log/partition_log_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/generated/errors.h"
#include "util/clock.h"
#include "util/lock_check.h"
#include "util/logger.h"

#define TXN_MARKER_VERSION 0
#define TXN_MARKER_ABORT 0
#define TXN_MARKER_COMMIT 1
#define TXN_MARKER_KEY_SIZE 4
#define TXN_MARKER_VALUE_SIZE 6

static char *txn_index_path(const struct log_segment *seg)
{
    char *path = NULL;
    if (asprintf(&path, "%s.txnindex", seg->path) < 0)
        return NULL;
    return path;
}

void partition_log_refresh_unstable_locked(struct partition_log *log)
{
    LOCK_ASSERT_HELD(&log->write_lock);
    atomic_store(&log->first_unstable_offset, log->producers ? producer_state_first_open_txn(log->producers) : -1);
}

int partition_log_complete_txn_locked(struct partition_log *log, int64_t producer_id, int16_t epoch,
                                      int32_t coordinator_epoch, bool commit, int64_t marker_offset, int64_t timestamp)
{
    LOCK_ASSERT_HELD(&log->write_lock);
    const struct producer_entry *e = producer_state_get(log->producers, producer_id);
    int64_t first = e ? e->current_txn_first_offset : -1;
    if (producer_state_end_txn(log->producers, producer_id, epoch, coordinator_epoch, timestamp) != 0)
        return ENOMEM;
    if (commit || first < 0) {
        partition_log_refresh_unstable_locked(log);
        return 0;
    }
    /* The LSO just after this marker: Kafka stores it so a reader can stop
     * scanning the index early. */
    int64_t unstable = producer_state_first_open_txn(log->producers);
    struct txn_index_entry entry = {
        .producer_id = producer_id,
        .first_offset = first,
        .last_offset = marker_offset,
        .last_stable_offset = unstable >= 0 && unstable <= marker_offset ? unstable : marker_offset + 1,
    };
    pthread_rwlock_wrlock(&log->lock);
    int rc = txn_index_add(&log->aborted, &entry);
    pthread_rwlock_unlock(&log->lock);
    if (rc != 0)
        return rc; /* the LSO stays put: the aborted records must not become readable */
    /* Only now may the LSO pass the aborted records: a reader that sees them
     * also sees their entry. */
    atomic_store(&log->first_unstable_offset, unstable);
    char *path = txn_index_path(log->segments[partition_log_segment_for(log, marker_offset)]);
    rc = path ? txn_index_append_file(path, &entry) : ENOMEM;
    free(path);
    return rc;
}

int16_t partition_log_append_txn_marker(struct partition_log *log, int64_t producer_id, int16_t producer_epoch,
                                        int32_t coordinator_epoch, bool commit, int32_t leader_epoch,
                                        int64_t *offset_out)
{
    if (partition_log_ensure_loaded(log) != 0)
        return KAFKA_ERR_KAFKA_STORAGE_ERROR;
    *offset_out = -1;
    if (producer_id < 0 || producer_epoch < 0)
        return KAFKA_ERR_INVALID_REQUEST;
    if (atomic_load(&log->offline) || atomic_load(&log->deleted))
        return KAFKA_ERR_KAFKA_STORAGE_ERROR;
    pthread_mutex_lock(&log->write_lock);
    char err[160];
    int64_t txn_first;
    int16_t code = atomic_load(&log->offline)
                       ? KAFKA_ERR_KAFKA_STORAGE_ERROR
                       : producer_state_check_marker(log->producers, producer_id, producer_epoch, coordinator_epoch,
                                                     &txn_first, err, sizeof err);
    if (code == KAFKA_ERR_NONE)
        partition_log_clear_verification_locked(log, producer_id); /* even when nothing is written */
    if (code != KAFKA_ERR_NONE || txn_first < 0) {
        /* No open transaction: a retried marker, already written. */
        pthread_mutex_unlock(&log->write_lock);
        if (code != KAFKA_ERR_NONE && code != KAFKA_ERR_KAFKA_STORAGE_ERROR)
            logger_debug("log", "%s: marker refused: %s", log->dir, err);
        return code;
    }
    int64_t now = clock_wall_ms();
    uint8_t key[TXN_MARKER_KEY_SIZE] = {0, TXN_MARKER_VERSION, 0, commit ? TXN_MARKER_COMMIT : TXN_MARKER_ABORT};
    uint8_t value[TXN_MARKER_VALUE_SIZE] = {0,
                                            TXN_MARKER_VERSION,
                                            (uint8_t)((uint32_t)coordinator_epoch >> 24),
                                            (uint8_t)((uint32_t)coordinator_epoch >> 16),
                                            (uint8_t)((uint32_t)coordinator_epoch >> 8),
                                            (uint8_t)coordinator_epoch};
    struct record_batch_builder b;
    record_batch_builder_init(&b, now);
    b.attributes = RECORD_BATCH_CONTROL_BIT | RECORD_BATCH_TRANSACTIONAL_BIT;
    b.producer_id = producer_id;
    b.producer_epoch = producer_epoch;
    b.base_sequence = -1;
    uint8_t *batch = NULL;
    size_t len = 0;
    if (record_batch_builder_add(&b, now, key, sizeof key, value, sizeof value, NULL, 0) != 0 ||
        record_batch_builder_finish(&b, &batch, &len) != 0) {
        record_batch_builder_free(&b);
        pthread_mutex_unlock(&log->write_lock);
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    }
    struct log_append_result res;
    memset(&res, 0, sizeof res);
    res.base_offset = -1;
    code = partition_log_append_locked(log, batch, len, leader_epoch, 1, &res);
    free(batch);
    if (code == KAFKA_ERR_NONE || res.base_offset >= 0) {
        /* Written (a failed flush still leaves it in the log). */
        int64_t marker_offset = atomic_load(&log->log_end_offset) - 1;
        int rc = partition_log_complete_txn_locked(log, producer_id, producer_epoch, coordinator_epoch, commit,
                                                   marker_offset, now);
        if (rc != 0) {
            logger_error("log", "%s: cannot record the end of producer %" PRId64 "'s transaction: %s", log->dir,
                         producer_id, strerror(rc));
            partition_log_mark_offline(log, "writing the transaction index", rc);
            code = KAFKA_ERR_KAFKA_STORAGE_ERROR;
        } else {
            *offset_out = marker_offset;
        }
    }
    pthread_mutex_unlock(&log->write_lock);
    return code;
}

enum log_marker_kind partition_log_marker_kind(const uint8_t *batch, size_t len, int32_t *coordinator_epoch)
{
    struct record_batch_header h;
    struct record_batch_record_iter it;
    struct record_batch_record rec;
    if (coordinator_epoch)
        *coordinator_epoch = -1;
    if (record_batch_parse_header(batch, len, &h) != 0 || record_batch_records_begin(&it, batch, len) != 0)
        return LOG_MARKER_OTHER;
    int rc = record_batch_records_next(&it, &rec);
    if (rc == 0 && h.record_count == 0)
        return LOG_MARKER_EMPTY;
    if (rc != 1 || rec.key_len < TXN_MARKER_KEY_SIZE || rec.key[0] != 0 || rec.key[1] != TXN_MARKER_VERSION)
        return LOG_MARKER_OTHER;
    int type = rec.key[2] << 8 | rec.key[3];
    if (type != TXN_MARKER_ABORT && type != TXN_MARKER_COMMIT)
        return LOG_MARKER_OTHER;
    if (coordinator_epoch && rec.value_len >= TXN_MARKER_VALUE_SIZE)
        *coordinator_epoch = (int32_t)((uint32_t)rec.value[2] << 24 | (uint32_t)rec.value[3] << 16 |
                                       (uint32_t)rec.value[4] << 8 | rec.value[5]);
    return type == TXN_MARKER_COMMIT ? LOG_MARKER_COMMIT : LOG_MARKER_ABORT;
}

int partition_log_replay_marker_locked(struct partition_log *log, const uint8_t *batch, size_t len)
{
    LOCK_ASSERT_HELD(&log->write_lock);
    struct record_batch_header h;
    int32_t coordinator_epoch;
    if (record_batch_parse_header(batch, len, &h) != 0 || h.producer_id < 0)
        return 0; /* not a marker we understand: nothing to replay */
    enum log_marker_kind kind = partition_log_marker_kind(batch, len, &coordinator_epoch);
    if (kind != LOG_MARKER_ABORT && kind != LOG_MARKER_COMMIT)
        return 0;
    return partition_log_complete_txn_locked(log, h.producer_id, h.producer_epoch, coordinator_epoch,
                                             kind == LOG_MARKER_COMMIT, h.base_offset, h.max_timestamp);
}

/* Keep the entries of idx that are not in set[0..n); both are in ascending
 * marker order, so one merge walk finds them. Returns how many went. */
static size_t filter_out(struct txn_index *idx, const struct txn_index_entry *set, size_t n)
{
    size_t kept = 0, s = 0;
    for (size_t i = 0; i < idx->count; i++) {
        const struct txn_index_entry *e = &idx->entries[i];
        while (s < n && set[s].last_offset < e->last_offset)
            s++;
        bool gone = false;
        for (size_t t = s; t < n && set[t].last_offset == e->last_offset && !gone; t++)
            gone = set[t].producer_id == e->producer_id;
        if (!gone)
            idx->entries[kept++] = *e;
    }
    size_t removed = idx->count - kept;
    idx->count = kept;
    return removed;
}

int partition_log_forget_aborted_locked(struct partition_log *log, const struct txn_index_entry *gone, size_t n)
{
    LOCK_ASSERT_HELD(&log->write_lock);
    int rc = 0;
    /* gone is in marker order: take it one segment at a time. */
    for (size_t i = 0; i < n && rc == 0;) {
        size_t seg_index = partition_log_segment_for(log, gone[i].last_offset);
        size_t j = i;
        while (j < n && partition_log_segment_for(log, gone[j].last_offset) == seg_index)
            j++;
        char *path = txn_index_path(log->segments[seg_index]);
        struct txn_index part = {0};
        rc = path ? txn_index_load_file(&part, path) : ENOMEM;
        if (rc == 0 && filter_out(&part, gone + i, j - i) > 0)
            rc = txn_index_write_file(path, part.entries, part.count);
        txn_index_free(&part);
        free(path);
        i = j;
    }
    if (rc != 0)
        return rc;
    pthread_rwlock_wrlock(&log->lock);
    filter_out(&log->aborted, gone, n);
    pthread_rwlock_unlock(&log->lock);
    return 0;
}

int partition_log_load_aborted_locked(struct partition_log *log, int64_t from)
{
    LOCK_ASSERT_HELD(&log->write_lock);
    struct txn_index loaded = {0};
    int rc = 0;
    for (size_t i = 0; i < log->segment_count && rc == 0; i++) {
        struct log_segment *seg = log->segments[i];
        char *path = txn_index_path(seg);
        struct txn_index part = {0};
        rc = path ? txn_index_load_file(&part, path) : ENOMEM;
        if (rc == 0) {
            size_t before = part.count;
            /* Entries must belong to this segment and precede the replay. */
            txn_index_drop_before(&part, seg->base_offset);
            txn_index_truncate(&part, from < seg->next_offset ? from : seg->next_offset);
            if (part.count != before)
                rc = txn_index_write_file(path, part.entries, part.count);
            for (size_t j = 0; j < part.count && rc == 0; j++)
                rc = txn_index_add(&loaded, &part.entries[j]);
        }
        txn_index_free(&part);
        free(path);
    }
    if (rc != 0) {
        txn_index_free(&loaded);
        return rc;
    }
    pthread_rwlock_wrlock(&log->lock);
    txn_index_free(&log->aborted);
    log->aborted = loaded;
    pthread_rwlock_unlock(&log->lock);
    return 0;
}

struct aborted_adapter {
    void (*fn)(void *arg, int64_t producer_id, int64_t first_offset);
    void *arg;
};

static void adapt_aborted(void *arg, const struct txn_index_entry *e)
{
    struct aborted_adapter *a = arg;
    if (a->fn)
        a->fn(a->arg, e->producer_id, e->first_offset);
}

int64_t partition_log_last_stable_offset(struct partition_log *log)
{
    if (partition_log_ensure_loaded(log) != 0)
        return atomic_load(&log->log_start_offset);
    int64_t end = partition_log_high_watermark(log);
    int64_t unstable = atomic_load(&log->first_unstable_offset);
    /* DeleteRecords may move the start past an open transaction's first
     * offset: as in Kafka, the LSO then never lags the log start. */
    int64_t start = atomic_load(&log->log_start_offset);
    if (unstable >= 0 && unstable < start)
        unstable = start;
    return unstable >= 0 && unstable < end ? unstable : end;
}

size_t partition_log_aborted_txns(struct partition_log *log, int64_t fetch_offset, int64_t upper_bound_offset,
                                  void (*fn)(void *arg, int64_t producer_id, int64_t first_offset), void *arg)
{
    if (partition_log_ensure_loaded(log) != 0)
        return 0;
    struct aborted_adapter a = {fn, arg};
    pthread_rwlock_rdlock(&log->lock);
    size_t n = txn_index_collect(&log->aborted, fetch_offset, upper_bound_offset, adapt_aborted, &a);
    pthread_rwlock_unlock(&log->lock);
    return n;
}

struct producer_list {
    struct producer_entry *items;
    size_t count, cap;
    bool failed;
};

static void collect_producer(void *arg, const struct producer_entry *e)
{
    struct producer_list *l = arg;
    if (l->count < l->cap)
        l->items[l->count++] = *e;
    else
        l->failed = true;
}

int partition_log_list_producers(struct partition_log *log, struct producer_entry **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    if (partition_log_ensure_loaded(log) != 0)
        return EIO;
    pthread_mutex_lock(&log->write_lock);
    size_t n = log->producers ? producer_state_count(log->producers) : 0;
    struct producer_list l = {.items = calloc(n ? n : 1, sizeof *l.items), .cap = n};
    if (!l.items) {
        pthread_mutex_unlock(&log->write_lock);
        return ENOMEM;
    }
    if (n > 0)
        producer_state_foreach(log->producers, collect_producer, &l);
    pthread_mutex_unlock(&log->write_lock);
    *out = l.items;
    *count = l.count;
    return 0;
}
