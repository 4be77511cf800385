/* The partition log's leader epoch cache: loading (and rebuilding) it at
 * open, keeping it in step with appends, truncations and start-offset
 * moves, and writing leader-epoch-checkpoint whenever it changes. */
#include "log/partition_log_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/generated/errors.h"
#include "protocol/record_batch.h"
#include "util/clock.h"
#include "util/lock_check.h"
#include "util/logger.h"

#define EPOCH_SCAN_BUF (64 * 1024)

static char *epoch_path(const struct partition_log *log)
{
    char *path = NULL;
    if (asprintf(&path, "%s/%s", log->dir, LEADER_EPOCH_CHECKPOINT_FILE) < 0)
        return NULL;
    return path;
}

int partition_log_write_epochs(struct partition_log *log)
{
    char *path = epoch_path(log);
    if (!path)
        return ENOMEM;
    /* Only write_lock holders change the cache, and the caller is one. A
     * log never flushed since it was created is rescanned whole after an
     * unclean stop, which rebuilds the cache (partition_log_open_epochs_locked):
     * its file needs no sync yet. */
    int rc = leader_epoch_checkpoint_write(path, &log->epochs, !atomic_load(&log->dir_unsynced));
    free(path);
    return rc;
}

int16_t partition_log_save_epochs_locked(struct partition_log *log)
{
    LOCK_ASSERT_HELD(&log->write_lock);
    int rc = partition_log_write_epochs(log);
    if (rc == 0)
        return KAFKA_ERR_NONE;
    /* A checkpoint that lags the log would answer OffsetForLeaderEpoch
     * wrongly after a restart; Kafka takes the log dir offline. */
    logger_error("log", "%s: cannot write %s: %s", log->dir, LEADER_EPOCH_CHECKPOINT_FILE, strerror(rc));
    partition_log_mark_offline(log, "writing the leader epoch checkpoint", rc);
    return KAFKA_ERR_KAFKA_STORAGE_ERROR;
}

/* Assign under the rwlock, so readers never see a half-updated list. */
static int assign_published(struct partition_log *log, int32_t epoch, int64_t start, bool *changed)
{
    pthread_rwlock_wrlock(&log->lock);
    int rc = leader_epoch_cache_assign(&log->epochs, epoch, start, changed);
    pthread_rwlock_unlock(&log->lock);
    return rc;
}

int16_t partition_log_assign_epochs_locked(struct partition_log *log, const uint8_t *batches, size_t len,
                                           int32_t leader_epoch)
{
    LOCK_ASSERT_HELD(&log->write_lock);
    bool dirty = false;
    int rc = 0;
    if (leader_epoch >= 0) {
        /* Every batch was stamped with leader_epoch: only the first can
         * start it. The common case (same epoch) needs no lock at all. */
        if (leader_epoch_cache_latest_epoch(&log->epochs) == leader_epoch)
            return KAFKA_ERR_NONE;
        struct record_batch_header h;
        if (record_batch_parse_header(batches, len, &h) != 0)
            return KAFKA_ERR_NONE;
        rc = assign_published(log, leader_epoch, h.base_offset, &dirty);
    } else {
        /* Batches keep the epochs they carry (a copy of a leader's log):
         * the cache follows them, as recovery would rebuild it. */
        struct record_batch_iter it;
        const uint8_t *batch;
        size_t blen;
        record_batch_iter_init(&it, batches, len);
        while (rc == 0 && record_batch_iter_next(&it, &batch, &blen) == 1) {
            struct record_batch_header h;
            record_batch_parse_header(batch, blen, &h);
            if (h.partition_leader_epoch < 0)
                continue;
            const struct leader_epoch_cache *c = &log->epochs;
            if (c->count > 0 && c->entries[c->count - 1].epoch == h.partition_leader_epoch &&
                c->entries[c->count - 1].start_offset <= h.base_offset)
                continue;
            bool changed = false;
            rc = assign_published(log, h.partition_leader_epoch, h.base_offset, &changed);
            dirty |= changed;
        }
    }
    if (rc != 0) {
        partition_log_mark_offline(log, "recording a leader epoch", rc);
        return KAFKA_ERR_KAFKA_STORAGE_ERROR;
    }
    return dirty ? partition_log_save_epochs_locked(log) : KAFKA_ERR_NONE;
}

int16_t partition_log_assign_leader_epoch(struct partition_log *log, int32_t leader_epoch)
{
    if (leader_epoch < 0)
        return KAFKA_ERR_NONE;
    if (!atomic_load(&log->loaded)) {
        /* The log end cannot move before the load, which applies the
         * epoch at the same offset it would start at now. */
        pthread_mutex_lock(&log->load_lock);
        bool deferred = !atomic_load(&log->loaded);
        if (deferred && leader_epoch > log->deferred_leader_epoch)
            log->deferred_leader_epoch = leader_epoch;
        pthread_mutex_unlock(&log->load_lock);
        if (deferred)
            return KAFKA_ERR_NONE;
    }
    pthread_mutex_lock(&log->write_lock);
    int16_t code = KAFKA_ERR_NONE;
    if (atomic_load(&log->offline) || atomic_load(&log->deleted)) {
        code = KAFKA_ERR_KAFKA_STORAGE_ERROR;
    } else {
        bool changed = false;
        int rc = assign_published(log, leader_epoch, atomic_load(&log->log_end_offset), &changed);
        if (rc != 0) {
            partition_log_mark_offline(log, "recording a leader epoch", rc);
            code = KAFKA_ERR_KAFKA_STORAGE_ERROR;
        } else if (changed) {
            code = partition_log_save_epochs_locked(log);
        }
    }
    pthread_mutex_unlock(&log->write_lock);
    return code;
}

static int assign_if_newer(struct partition_log *log, int32_t epoch, int64_t base_offset, bool *dirty)
{
    if (epoch < 0 || epoch <= leader_epoch_cache_latest_epoch(&log->epochs))
        return 0;
    bool changed = false;
    int rc = leader_epoch_cache_assign(&log->epochs, epoch, base_offset, &changed);
    *dirty |= changed;
    return rc;
}

/* Read the batch headers of one segment, assigning as recovery does. */
static int walk_segment_epochs(struct partition_log *log, const struct log_segment *seg, bool *dirty)
{
    struct log_scanner scan;
    log_scanner_init(&scan, seg->log_fd, seg->size, EPOCH_SCAN_BUF);
    int rc = 0;
    int64_t pos = 0;
    while (rc == 0 && pos < seg->size) {
        const uint8_t *p = log_scanner_get(&scan, pos, RECORD_BATCH_HEADER_SIZE);
        if (!p)
            break;
        struct record_batch_header h;
        record_batch_parse_header(p, RECORD_BATCH_HEADER_SIZE, &h);
        int64_t total = (int64_t)record_batch_total_size(&h);
        /* The open validated every batch; stop at anything odd, never loop. */
        if (h.batch_length <= 0 || total > seg->size - pos)
            break;
        rc = assign_if_newer(log, h.partition_leader_epoch, h.base_offset, dirty);
        pos += total;
    }
    if (rc == 0 && scan.io_error)
        rc = EIO;
    log_scanner_free(&scan);
    return rc;
}

/* Kafka's recovery rule: a batch whose epoch is newer than the latest known
 * one starts that epoch. Segments from rescanned_from on were rescanned by
 * the open, which noted their epoch rises; earlier ones are read here. */
static int scan_epochs(struct partition_log *log, size_t first, size_t rescanned_from, bool *dirty)
{
    int rc = 0;
    for (size_t i = first; rc == 0 && i < log->segment_count; i++) {
        const struct log_segment *seg = log->segments[i];
        if (i < rescanned_from) {
            rc = walk_segment_epochs(log, seg, dirty);
            continue;
        }
        for (size_t m = 0; rc == 0 && m < seg->epoch_mark_count; m++)
            rc = assign_if_newer(log, seg->epoch_marks[m].epoch, seg->epoch_marks[m].base_offset, dirty);
    }
    return rc;
}

int partition_log_open_epochs_locked(struct partition_log *log, int64_t recovery_point, char *err, size_t errlen)
{
    LOCK_ASSERT_HELD(&log->write_lock);
    char *path = epoch_path(log);
    if (!path) {
        snprintf(err, errlen, "out of memory");
        return ENOMEM;
    }
    char why[160];
    int64_t end = atomic_load(&log->log_end_offset);
    bool has_data = end > log->segments[0]->base_offset;
    int rc = leader_epoch_checkpoint_read(path, &log->epochs, why, sizeof why);
    bool dirty = false, rebuilding = false;
    size_t scan_from = SIZE_MAX;
    /* Segments the open rescanned (an unclean stop): their epoch rises are
     * already noted. */
    size_t rescanned_from = recovery_point >= 0 ? partition_log_segment_for(log, recovery_point) : SIZE_MAX;
    if (rc != 0) {
        /* Kafka rebuilds a lost cache from the batches during recovery. A
         * log without the file and without data is a fresh one: nothing
         * to do, and no scan, so opening many new partitions stays cheap.
         * With data, every segment's headers are walked: only a deleted or
         * damaged file gets here, since the file is written before an
         * append that adds an epoch returns. */
        if (rc != ENOENT)
            logger_warn("log", "%s: %s: %s; rebuilding it from the log", log->dir, LEADER_EPOCH_CHECKPOINT_FILE, why);
        else if (has_data)
            logger_warn("log", "%s: %s missing; rebuilding it from the log", log->dir, LEADER_EPOCH_CHECKPOINT_FILE);
        leader_epoch_cache_clear(&log->epochs);
        if (has_data) {
            scan_from = 0;
            rebuilding = true;
            dirty = true;
        }
    } else if (recovery_point >= 0) {
        /* After an unclean stop the file may name batches that were lost
         * (its entries are written before the data), and the rescanned
         * batches may start an epoch it lacks: drop the first, then let
         * the rescanned batches add the second, as Kafka's recovery does. */
        scan_from = rescanned_from;
        dirty = leader_epoch_cache_truncate_from_end(&log->epochs, end + 1);
    }
    rc = 0;
    if (scan_from != SIZE_MAX) {
        int64_t t0 = clock_mono_ns();
        rc = scan_epochs(log, scan_from, rescanned_from, &dirty);
        if (rc != 0)
            snprintf(err, errlen, "cannot rebuild the leader epochs of %s: %s", log->dir, strerror(rc));
        else if (rebuilding)
            logger_info("log", "%s: leader epochs rebuilt: %zu entries in %.1f ms", log->dir, log->epochs.count,
                        (double)(clock_mono_ns() - t0) / 1e6);
    }
    for (size_t i = 0; i < log->segment_count; i++)
        log_segment_drop_epoch_marks(log->segments[i]);
    /* Entries past the log end go. Kafka drops one starting at the end as
     * well and assigns it again when the replica leads; keeping it (an
     * epoch begun with no record yet, which is what every empty partition
     * has) saves two file writes per such partition at every start. */
    dirty |= leader_epoch_cache_truncate_from_end(&log->epochs, end + 1);
    if (rc == 0 && dirty &&
        (rc = leader_epoch_checkpoint_write(path, &log->epochs, !atomic_load(&log->dir_unsynced))) != 0)
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(rc));
    free(path);
    return rc;
}

bool partition_log_epochs_end_moved(struct partition_log *log, int64_t end_offset)
{
    return leader_epoch_cache_truncate_from_end(&log->epochs, end_offset);
}

bool partition_log_epochs_start_moved(struct partition_log *log, int64_t start_offset)
{
    return leader_epoch_cache_truncate_from_start(&log->epochs, start_offset);
}

int32_t partition_log_latest_epoch(struct partition_log *log)
{
    if (partition_log_ensure_loaded(log) != 0)
        return -1;
    pthread_rwlock_rdlock(&log->lock);
    int32_t epoch = leader_epoch_cache_latest_epoch(&log->epochs);
    pthread_rwlock_unlock(&log->lock);
    return epoch;
}

int64_t partition_log_end_offset_for_epoch(struct partition_log *log, int32_t epoch, int32_t *found_epoch)
{
    if (partition_log_ensure_loaded(log) != 0) {
        *found_epoch = -1;
        return -1;
    }
    int64_t offset;
    pthread_rwlock_rdlock(&log->lock);
    leader_epoch_cache_end_offset_for(&log->epochs, epoch, atomic_load(&log->log_end_offset), found_epoch, &offset);
    pthread_rwlock_unlock(&log->lock);
    return offset;
}

int partition_log_epoch_entries(struct partition_log *log, struct leader_epoch_entry **out, size_t *count)
{
    if (partition_log_ensure_loaded(log) != 0) {
        *out = NULL;
        *count = 0;
        return EIO;
    }
    pthread_rwlock_rdlock(&log->lock);
    size_t n = log->epochs.count;
    struct leader_epoch_entry *copy = malloc((n ? n : 1) * sizeof *copy);
    if (copy && n)
        memcpy(copy, log->epochs.entries, n * sizeof *copy);
    pthread_rwlock_unlock(&log->lock);
    *out = copy;
    *count = copy ? n : 0;
    return copy ? 0 : ENOMEM;
}
