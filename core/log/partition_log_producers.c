/* The producer-state side of a partition log: checking appends against it,
 * snapshot files at rolls and close, rebuilding it at open and after
 * truncation, snapshot cleanup and expiry. Everything here runs under the
 * log's write_lock. */
#include "log/partition_log_internal.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol/generated/errors.h"
#include "util/lock_check.h"
#include "util/logger.h"

#define SNAPSHOT_SUFFIX ".snapshot"
#define PRODUCER_SCAN_BUF (64 * 1024)

/* Offset of a "<20 digits>.snapshot" name, or -1. */
static int64_t snapshot_offset(const char *name)
{
    if (strlen(name) != 20 + strlen(SNAPSHOT_SUFFIX) || strcmp(name + 20, SNAPSHOT_SUFFIX) != 0)
        return -1;
    int64_t v = 0;
    for (int i = 0; i < 20; i++) {
        if (name[i] < '0' || name[i] > '9' || v > (INT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (name[i] - '0');
    }
    return v;
}

static char *snapshot_path(const struct partition_log *log, int64_t offset)
{
    char *path = NULL;
    if (asprintf(&path, "%s/%020" PRId64 SNAPSHOT_SUFFIX, log->dir, offset) < 0)
        return NULL;
    return path;
}

static void remove_snapshot(const struct partition_log *log, int64_t offset)
{
    char *path = snapshot_path(log, offset);
    if (path && unlink(path) != 0 && errno != ENOENT)
        logger_warn("log", "cannot remove %s: %s", path, strerror(errno));
    free(path);
}

/* Remove snapshots outside [keep_from, keep_to]; returns the largest kept
 * offset, or -1 when none is left. */
static int64_t prune_snapshots(struct partition_log *log, int64_t keep_from, int64_t keep_to)
{
    DIR *d = opendir(log->dir);
    if (!d)
        return -1;
    int64_t latest = -1;
    int64_t *doomed = NULL;
    size_t doomed_count = 0, doomed_cap = 0;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        int64_t off = snapshot_offset(ent->d_name);
        if (off < 0)
            continue;
        if (off >= keep_from && off <= keep_to) {
            if (off > latest)
                latest = off;
            continue;
        }
        if (doomed_count == doomed_cap) {
            size_t cap = doomed_cap ? doomed_cap * 2 : 8;
            int64_t *grown = realloc(doomed, cap * sizeof *grown);
            if (!grown)
                break;
            doomed = grown;
            doomed_cap = cap;
        }
        doomed[doomed_count++] = off;
    }
    closedir(d);
    for (size_t i = 0; i < doomed_count; i++)
        remove_snapshot(log, doomed[i]);
    free(doomed);
    return latest;
}

/* Index of the last segment with base_offset <= offset (0 if none). */
static size_t segment_index_for(const struct partition_log *log, int64_t offset)
{
    size_t i = 0;
    while (i + 1 < log->segment_count && log->segments[i + 1]->base_offset <= offset)
        i++;
    return i;
}

/* Replay every batch holding offsets >= from into the producer state. */
static int replay_from(struct partition_log *log, int64_t from, int64_t *batches_out)
{
    int64_t replayed = 0;
    for (size_t i = segment_index_for(log, from); i < log->segment_count; i++) {
        struct log_segment *seg = log->segments[i];
        if (seg->size == 0)
            continue;
        struct log_scanner scan;
        struct record_batch_header h;
        int64_t pos;
        log_scanner_init(&scan, seg->log_fd, seg->size, PRODUCER_SCAN_BUF);
        int found = log_segment_find(seg, from, &scan, &pos, &h);
        while (found == 1) {
            if (h.producer_id >= 0 && h.base_offset >= from) {
                size_t size = record_batch_total_size(&h);
                const uint8_t *batch = NULL;
                int rc = 0;
                if (record_batch_is_control(&h) && !(batch = log_scanner_get(&scan, pos, size)))
                    rc = EIO;
                if (rc == 0)
                    rc = partition_log_replay_batch_locked(log, &h, batch, size);
                if (rc != 0) {
                    log_scanner_free(&scan);
                    return rc;
                }
                replayed++;
            }
            pos += (int64_t)record_batch_total_size(&h);
            if (pos >= seg->size)
                break;
            const uint8_t *p = log_scanner_get(&scan, pos, RECORD_BATCH_HEADER_SIZE);
            if (!p) {
                found = -1;
                break;
            }
            record_batch_parse_header(p, RECORD_BATCH_HEADER_SIZE, &h);
        }
        log_scanner_free(&scan);
        if (found < 0)
            return EIO;
    }
    *batches_out = replayed;
    return 0;
}

int partition_log_replay_batch_locked(struct partition_log *log, const struct record_batch_header *h,
                                      const uint8_t *batch, size_t size)
{
    LOCK_ASSERT_HELD(&log->write_lock);
    if (h->producer_id < 0)
        return 0;
    if (!record_batch_is_control(h))
        return producer_state_update(log->producers, h, h->base_offset, record_batch_last_offset(h)) != 0 ? ENOMEM : 0;
    /* Markers end transactions and rebuild the aborted index. */
    return partition_log_replay_marker_locked(log, batch, size);
}

int partition_log_replay_batches_locked(struct partition_log *log, const uint8_t *batches, size_t len)
{
    LOCK_ASSERT_HELD(&log->write_lock);
    struct record_batch_iter it;
    const uint8_t *batch;
    size_t blen;
    int rc = 0;
    record_batch_iter_init(&it, batches, len);
    while (rc == 0 && record_batch_iter_next(&it, &batch, &blen) == 1) {
        struct record_batch_header h;
        record_batch_parse_header(batch, blen, &h);
        rc = partition_log_replay_batch_locked(log, &h, batch, blen);
    }
    /* A marker in the middle may have set the bound without transactions
     * opened later in the same append: recompute it from the whole state
     * (on failure the log goes offline with the bound where it is). */
    if (rc == 0)
        partition_log_refresh_unstable_locked(log);
    return rc;
}

static void snapshot_producers(struct partition_log *log, bool sync);

int partition_log_load_producers_locked(struct partition_log *log)
{
    LOCK_ASSERT_HELD(&log->write_lock);
    if (!log->producers && !(log->producers = producer_state_new()))
        return ENOMEM;
    int64_t end = atomic_load(&log->log_end_offset);
    int64_t from = log->segments[0]->base_offset;
    int64_t latest = prune_snapshots(log, 0, end);
    producer_state_clear(log->producers);
    /* Walk back over unreadable snapshots to the newest good one. */
    while (latest >= 0) {
        char *path = snapshot_path(log, latest);
        int rc = path ? producer_state_read_snapshot(log->producers, path) : ENOMEM;
        free(path);
        if (rc == 0) {
            from = latest;
            break;
        }
        logger_warn("log", "%s: producer snapshot at %" PRId64 " unreadable (%s); discarding it", log->dir, latest,
                    strerror(rc));
        remove_snapshot(log, latest);
        latest = prune_snapshots(log, 0, latest - 1);
    }
    int64_t replayed = 0;
    int rc = partition_log_load_aborted_locked(log, from);
    if (rc == 0)
        rc = replay_from(log, from, &replayed);
    partition_log_refresh_unstable_locked(log);
    if (rc != 0) {
        logger_error("log", "%s: cannot rebuild producer state: %s", log->dir, strerror(rc));
        return rc;
    }
    if (replayed > 0)
        logger_info("log", "%s: rebuilt producer state from offset %" PRId64 " (%" PRId64 " batches, %zu producers)",
                    log->dir, from, replayed, producer_state_count(log->producers));
    /* Even an empty state is worth a snapshot: the next start then reads
     * from here instead of scanning the log again. Not fsynced: at open the
     * log tail it describes may not be on disk either, and two fsyncs per
     * partition made an unclean start of 1000 partitions take seconds. */
    if (from < end)
        snapshot_producers(log, false);
    return 0;
}

static void snapshot_producers(struct partition_log *log, bool sync)
{
    if (!log->producers)
        return;
    int64_t end = atomic_load(&log->log_end_offset);
    char *path = snapshot_path(log, end);
    int rc = !path  ? ENOMEM
             : sync ? producer_state_write_snapshot(log->producers, path)
                    : producer_state_write_snapshot_unsynced(log->producers, path);
    if (rc != 0)
        logger_warn("log", "%s: cannot write producer snapshot at %" PRId64 ": %s", log->dir, end, strerror(rc));
    free(path);
}

void partition_log_snapshot_producers_locked(struct partition_log *log)
{
    LOCK_ASSERT_HELD(&log->write_lock);
    snapshot_producers(log, true);
}

void partition_log_remove_old_snapshots_locked(struct partition_log *log)
{
    LOCK_ASSERT_HELD(&log->write_lock);
    prune_snapshots(log, log->segments[0]->base_offset, INT64_MAX);
}

int16_t partition_log_check_producers_locked(struct partition_log *log, const uint8_t *batches, size_t len,
                                             bool from_coordinator, bool *duplicate, struct log_append_result *res)
{
    LOCK_ASSERT_HELD(&log->write_lock);
    *duplicate = false;
    struct record_batch_iter it;
    const uint8_t *batch;
    size_t blen;
    int batch_count = 0;
    bool idempotent = false;
    record_batch_iter_init(&it, batches, len);
    while (record_batch_iter_next(&it, &batch, &blen) == 1) {
        struct record_batch_header h;
        record_batch_parse_header(batch, blen, &h);
        batch_count++;
        /* A coordinator's own transactional write (TxnOffsetCommit records
         * in __consumer_offsets) carries no sequence, as in Kafka: only a
         * stale epoch is refused. The open transaction is still recorded
         * when the producer state is updated after the append. Producers
         * never get this exemption. */
        if (from_coordinator && record_batch_is_transactional(&h) && !record_batch_is_control(&h) &&
            h.base_sequence == -1 && h.producer_id >= 0) {
            const struct producer_entry *e = log->producers ? producer_state_get(log->producers, h.producer_id) : NULL;
            if (e && h.producer_epoch < e->epoch) {
                snprintf(res->error_message, sizeof res->error_message,
                         "producer %" PRId64 " epoch %d is older than %d", h.producer_id, (int)h.producer_epoch,
                         (int)e->epoch);
                return KAFKA_ERR_INVALID_PRODUCER_EPOCH;
            }
            continue;
        }
        if (record_batch_is_control(&h)) {
            /* Markers come from transaction coordinators, never from producers. */
            snprintf(res->error_message, sizeof res->error_message, "control batches cannot be produced");
            return KAFKA_ERR_INVALID_RECORD;
        }
        if (h.producer_id < 0) {
            if (record_batch_is_transactional(&h)) {
                snprintf(res->error_message, sizeof res->error_message, "a transactional batch needs a producer id");
                return KAFKA_ERR_INVALID_RECORD;
            }
            continue;
        }
        idempotent = true;
        if (h.producer_epoch < 0 || h.base_sequence < 0) {
            snprintf(res->error_message, sizeof res->error_message,
                     "batch with producer id %" PRId64 " lacks an epoch or sequence", h.producer_id);
            return KAFKA_ERR_INVALID_RECORD;
        }
    }
    if (!idempotent)
        return KAFKA_ERR_NONE;
    /* Kafka's rule for idempotent produce: exactly one batch per partition,
     * so a duplicate is all or nothing. */
    if (batch_count != 1) {
        snprintf(res->error_message, sizeof res->error_message,
                 "an idempotent produce must carry exactly one batch per partition");
        return KAFKA_ERR_INVALID_RECORD;
    }
    struct record_batch_header h;
    record_batch_parse_header(batches, len, &h);
    struct producer_check_result check;
    int16_t code = producer_state_check(log->producers, &h, &check, res->error_message, sizeof res->error_message);
    const struct producer_entry *e = producer_state_get(log->producers, h.producer_id);
    if (code == KAFKA_ERR_NONE && !check.duplicate && !record_batch_is_transactional(&h) && e &&
        e->current_txn_first_offset >= 0) {
        snprintf(res->error_message, sizeof res->error_message,
                 "producer %" PRId64 " sent a non-transactional batch inside its open transaction", h.producer_id);
        return KAFKA_ERR_INVALID_TXN_STATE;
    }
    if (code == KAFKA_ERR_NONE && check.duplicate) {
        *duplicate = true;
        res->duplicate = true;
        res->base_offset = check.first_offset;
        res->last_offset = check.last_offset;
    }
    return code;
}

void partition_log_note_open_txns_locked(struct partition_log *log, const uint8_t *batches, size_t len)
{
    LOCK_ASSERT_HELD(&log->write_lock);
    struct record_batch_iter it;
    const uint8_t *batch;
    size_t blen;
    record_batch_iter_init(&it, batches, len);
    while (record_batch_iter_next(&it, &batch, &blen) == 1) {
        struct record_batch_header h;
        record_batch_parse_header(batch, blen, &h);
        if (h.producer_id < 0 || !record_batch_is_transactional(&h) || record_batch_is_control(&h))
            continue;
        const struct producer_entry *e = producer_state_get(log->producers, h.producer_id);
        int64_t first = e && e->current_txn_first_offset >= 0 ? e->current_txn_first_offset : h.base_offset;
        int64_t unstable = atomic_load(&log->first_unstable_offset);
        if (unstable < 0 || first < unstable)
            atomic_store(&log->first_unstable_offset, first);
    }
}

void partition_log_update_producers_locked(struct partition_log *log, const uint8_t *batches, size_t len)
{
    LOCK_ASSERT_HELD(&log->write_lock);
    struct record_batch_iter it;
    const uint8_t *batch;
    size_t blen;
    record_batch_iter_init(&it, batches, len);
    while (record_batch_iter_next(&it, &batch, &blen) == 1) {
        struct record_batch_header h;
        record_batch_parse_header(batch, blen, &h);
        if (h.producer_id < 0 || record_batch_is_control(&h))
            continue;
        if (producer_state_update(log->producers, &h, h.base_offset, record_batch_last_offset(&h)) != 0)
            /* The batch is written; only retry detection for it is lost. */
            logger_warn("log", "%s: out of memory recording producer %" PRId64, log->dir, h.producer_id);
        int64_t unstable = atomic_load(&log->first_unstable_offset);
        const struct producer_entry *e = producer_state_get(log->producers, h.producer_id);
        if (e && e->current_txn_first_offset >= 0 && (unstable < 0 || e->current_txn_first_offset < unstable))
            atomic_store(&log->first_unstable_offset, e->current_txn_first_offset);
    }
}

int partition_log_expire_producers(struct partition_log *log, int64_t now_ms)
{
    if (!atomic_load(&log->loaded))
        return 0; /* nothing unflushed or due in a log not loaded */
    pthread_mutex_lock(&log->write_lock);
    size_t n = log->producers ? producer_state_expire(log->producers, now_ms, log->cfg.producer_id_expiration_ms) : 0;
    pthread_mutex_unlock(&log->write_lock);
    if (n > 0)
        logger_debug("log", "%s: expired %zu idle producers", log->dir, n);
    return (int)n;
}

bool partition_log_producer_lookup(struct partition_log *log, int64_t producer_id, struct producer_entry *out)
{
    if (partition_log_ensure_loaded(log) != 0)
        return false;
    pthread_mutex_lock(&log->write_lock);
    const struct producer_entry *e = log->producers ? producer_state_get(log->producers, producer_id) : NULL;
    if (e)
        *out = *e;
    pthread_mutex_unlock(&log->write_lock);
    return e != NULL;
}

size_t partition_log_producer_count(struct partition_log *log)
{
    if (partition_log_ensure_loaded(log) != 0)
        return 0;
    pthread_mutex_lock(&log->write_lock);
    size_t n = log->producers ? producer_state_count(log->producers) : 0;
    pthread_mutex_unlock(&log->write_lock);
    return n;
}
