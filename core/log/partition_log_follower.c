/* The follower's side of a partition log: appending a copy of the leader's
 * batches as they are (the replication append origin), and the high
 * watermark the replica layer moves. */
#include "log/partition_log_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <time.h>

#include "protocol/generated/errors.h"
#include "util/clock.h"
#include "util/lock_check.h"

/* The replication origin's offset rule (Kafka's UnexpectedAppendOffset and
 * OffsetsOutOfOrder checks): the batches start at or past the log end and
 * each starts past the one before. *last gets the last offset. */
static int16_t check_offsets(struct partition_log *log, const uint8_t *batches, size_t len, int64_t *last,
                             struct log_append_result *res)
{
    struct record_batch_iter it;
    const uint8_t *batch;
    size_t blen;
    int64_t next = atomic_load(&log->log_end_offset);
    record_batch_iter_init(&it, batches, len);
    while (record_batch_iter_next(&it, &batch, &blen) == 1) {
        struct record_batch_header h;
        record_batch_parse_header(batch, blen, &h);
        if (h.base_offset < next || h.base_offset > INT64_MAX - 1 - h.last_offset_delta || h.last_offset_delta < 0) {
            snprintf(res->error_message, sizeof res->error_message,
                     "batch at offset %" PRId64 " does not follow offset %" PRId64, h.base_offset, next - 1);
            return KAFKA_ERR_OFFSET_OUT_OF_RANGE;
        }
        next = record_batch_last_offset(&h) + 1;
    }
    /* A segment indexes offsets relative to its base, which is at most the
     * log end: a wider gap needs the fetcher to start the log over there. */
    if (next - 1 - atomic_load(&log->log_end_offset) > INT32_MAX) {
        snprintf(res->error_message, sizeof res->error_message, "offset %" PRId64 " is too far past the log end",
                 next - 1);
        return KAFKA_ERR_OFFSET_OUT_OF_RANGE;
    }
    *last = next - 1;
    return KAFKA_ERR_NONE;
}

int16_t partition_log_append_follower_locked(struct partition_log *log, const uint8_t *batches, size_t len,
                                             int32_t records, struct log_append_result *res)
{
    LOCK_ASSERT_HELD(&log->write_lock);
    int64_t last;
    int16_t code = check_offsets(log, batches, len, &last, res);
    if (code != KAFKA_ERR_NONE)
        return code;
    /* Before the data, as on the leader. */
    code = partition_log_assign_epochs_locked(log, batches, len, -1);
    if (code != KAFKA_ERR_NONE) {
        snprintf(res->error_message, sizeof res->error_message, "cannot record the leader epoch");
        return code;
    }
    return partition_log_write_batches_locked(log, batches, len, last, records, clock_wall_ms(), true, res);
}

int64_t partition_log_high_watermark(struct partition_log *log)
{
    int64_t end = atomic_load(&log->log_end_offset);
    if (atomic_load_explicit(&log->hw_tracks_end, memory_order_relaxed))
        return end;
    int64_t hw = atomic_load(&log->high_watermark);
    int64_t start = atomic_load(&log->log_start_offset);
    /* The start may have moved past it (DeleteRecords, retention). */
    if (hw > end)
        hw = end;
    return hw < start ? start : hw;
}

int16_t partition_log_wait_replicated(struct partition_log *log, int32_t epoch, int64_t end, int64_t timeout_ms)
{
    int64_t deadline = clock_mono_ms() + timeout_ms;
    for (;;) {
        /* The records are still ours while the epoch they were written in
         * reaches past them: a truncation to another leader's log ends the
         * epoch earlier (KIP-101's end offset for an epoch). */
        if (epoch >= 0) {
            int32_t found = -1;
            int64_t epoch_end = partition_log_end_offset_for_epoch(log, epoch, &found);
            if (found != epoch || epoch_end < end)
                return KAFKA_ERR_NOT_LEADER_OR_FOLLOWER;
        }
        if (partition_log_high_watermark(log) >= end)
            return KAFKA_ERR_NONE;
        if (atomic_load(&log->offline))
            return KAFKA_ERR_KAFKA_STORAGE_ERROR;
        if (clock_mono_ms() >= deadline || atomic_load(&log->replication_waits_cancelled))
            return KAFKA_ERR_REQUEST_TIMED_OUT;
        struct timespec pause = {.tv_sec = 0, .tv_nsec = 2 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}

void partition_log_cancel_replication_waits(struct partition_log *log)
{
    atomic_store(&log->replication_waits_cancelled, true);
}

int64_t partition_log_update_high_watermark(struct partition_log *log, int64_t offset)
{
    pthread_mutex_lock(&log->write_lock);
    if (!atomic_load(&log->hw_tracks_end)) {
        int64_t end = atomic_load(&log->log_end_offset);
        if (offset > end)
            offset = end;
        if (offset > atomic_load(&log->high_watermark))
            atomic_store(&log->high_watermark, offset);
    }
    pthread_mutex_unlock(&log->write_lock);
    return partition_log_high_watermark(log);
}

void partition_log_set_high_watermark_tracks_end(struct partition_log *log, bool track)
{
    pthread_mutex_lock(&log->write_lock);
    if (!track && atomic_load(&log->hw_tracks_end))
        atomic_store(&log->high_watermark, atomic_load(&log->log_end_offset));
    atomic_store(&log->hw_tracks_end, track);
    pthread_mutex_unlock(&log->write_lock);
}

bool partition_log_high_watermark_tracks_end(struct partition_log *log)
{
    return atomic_load(&log->hw_tracks_end);
}

void partition_log_restore_high_watermark(struct partition_log *log, int64_t offset)
{
    pthread_mutex_lock(&log->write_lock);
    int64_t end = atomic_load(&log->log_end_offset);
    int64_t start = atomic_load(&log->log_start_offset);
    /* The checkpoint may be ahead of a log cut short by a crash (the HW is
     * written without the data being flushed) or behind a moved start. */
    if (offset > end)
        offset = end;
    if (offset < start)
        offset = start;
    atomic_store(&log->high_watermark, offset);
    /* Not tracking: the replica layer's "stop tracking" then keeps this
     * value instead of taking the log end, which may hold records never
     * replicated; a partition led alone starts tracking again. */
    atomic_store(&log->hw_tracks_end, false);
    pthread_mutex_unlock(&log->write_lock);
}

int16_t partition_log_truncate_fully_and_start_at(struct partition_log *log, int64_t offset)
{
    if (partition_log_ensure_loaded(log) != 0)
        return KAFKA_ERR_KAFKA_STORAGE_ERROR;
    if (offset < 0)
        return KAFKA_ERR_OFFSET_OUT_OF_RANGE;
    pthread_mutex_lock(&log->write_lock);
    if (atomic_load(&log->offline)) {
        pthread_mutex_unlock(&log->write_lock);
        return KAFKA_ERR_KAFKA_STORAGE_ERROR;
    }
    int rc = 0;
    char err[256];
    struct log_segment *fresh = NULL;
    log->truncations++;
    atomic_store(&log->clean_checkpoint, -1); /* the cleaner sets it again */
    pthread_rwlock_wrlock(&log->lock);
    while (log->segment_count > 0)
        log_segment_close(log->segments[--log->segment_count], true);
    rc = log_segment_create(log->dir, offset, &log->cfg, clock_wall_ms(), &fresh, err, sizeof err);
    if (rc == 0) {
        log->segments[log->segment_count++] = fresh;
        atomic_store(&log->log_start_offset, offset);
        atomic_store(&log->log_end_offset, offset);
        atomic_store(&log->high_watermark, offset);
        atomic_store(&log->recovery_point, offset);
        /* None of the old epochs has data left (Kafka clears the cache). */
        leader_epoch_cache_clear(&log->epochs);
    }
    pthread_rwlock_unlock(&log->lock);
    if (rc == 0 && partition_log_save_epochs_locked(log) != KAFKA_ERR_NONE)
        rc = EIO;
    if (rc == 0) {
        /* Snapshots of the old log go; the producer state starts empty. */
        partition_log_remove_old_snapshots_locked(log);
        rc = partition_log_load_producers_locked(log);
    }
    if (rc != 0)
        partition_log_mark_offline(log, "starting over", rc);
    pthread_mutex_unlock(&log->write_lock);
    return rc == 0 ? KAFKA_ERR_NONE : KAFKA_ERR_KAFKA_STORAGE_ERROR;
}
