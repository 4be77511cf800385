/* Group commit: partition_log_flush_to fdatasyncs outside write_lock so a
 * slow disk sync does not hold up appends to the same partition; the
 * background sync of rolled segments, which moves the recovery point; the
 * flushes under write_lock (flush.ms, flush.messages, shutdown) and the
 * time-based roll the same periodic pass drives. */
#include "log/partition_log_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "protocol/generated/errors.h"
#include "util/fs_util.h"
#include "util/lock_check.h"
#include "util/logger.h"

/* The files of the segments that may hold unflushed data, dup()ed so that a
 * roll, retention or truncation meanwhile cannot close them under the sync. */
struct flush_files {
    int *fds;
    size_t count;
};

static void flush_files_close(struct flush_files *f)
{
    for (size_t i = 0; i < f->count; i++)
        close(f->fds[i]);
    free(f->fds);
    f->fds = NULL;
    f->count = 0;
}

int partition_log_sync_new_dir(struct partition_log *log)
{
    if (!atomic_load(&log->dir_unsynced))
        return 0;
    /* The segment files' entries, then the directory's own in the log dir.
     * Two flushes racing here both sync: harmless. */
    int rc = fs_fsync_dir(log->dir);
    if (rc == 0)
        rc = fs_fsync_parent_dir(log->dir);
    if (rc == 0)
        atomic_store(&log->dir_unsynced, false);
    return rc;
}

/* Caller holds write_lock. Returns 0 or errno. */
static int flush_files_collect(struct partition_log *log, int64_t from, struct flush_files *out)
{
    size_t first = partition_log_segment_for(log, from);
    size_t segments = log->segment_count - first;
    out->count = 0;
    out->fds = calloc(segments * 3, sizeof *out->fds);
    if (!out->fds)
        return ENOMEM;
    for (size_t i = first; i < log->segment_count; i++) {
        const struct log_segment *seg = log->segments[i];
        int wanted[3] = {seg->log_fd, seg->index_fd, seg->time_fd};
        for (size_t k = 0; k < 3; k++) {
            int fd = dup(wanted[k]);
            if (fd < 0) {
                int err = errno;
                flush_files_close(out);
                return err;
            }
            out->fds[out->count++] = fd;
        }
    }
    return 0;
}

int16_t partition_log_flush_to(struct partition_log *log, int64_t end_offset)
{
    if (!atomic_load(&log->loaded))
        return KAFKA_ERR_NONE; /* nothing unflushed or due in a log not loaded */
    if (atomic_load(&log->recovery_point) >= end_offset)
        return KAFKA_ERR_NONE;
    pthread_mutex_lock(&log->flush_lock);
    int16_t code = KAFKA_ERR_NONE;
    /* Whoever held flush_lock before us may have synced our records. */
    if (atomic_load(&log->recovery_point) >= end_offset)
        goto out;

    pthread_mutex_lock(&log->write_lock);
    if (atomic_load(&log->offline)) {
        pthread_mutex_unlock(&log->write_lock);
        code = KAFKA_ERR_KAFKA_STORAGE_ERROR;
        goto out;
    }
    int64_t from = atomic_load(&log->recovery_point);
    int64_t end = atomic_load(&log->log_end_offset);
    uint64_t truncations = log->truncations;
    struct flush_files files = {0};
    int rc = end > from ? flush_files_collect(log, from, &files) : 0;
    pthread_mutex_unlock(&log->write_lock);
    if (rc != 0) {
        code = KAFKA_ERR_KAFKA_STORAGE_ERROR;
        goto out;
    }

    for (size_t i = 0; i < files.count && rc == 0; i++)
        if (fdatasync(files.fds[i]) != 0)
            rc = errno;
    flush_files_close(&files);
    if (rc == 0)
        rc = partition_log_sync_new_dir(log);

    pthread_mutex_lock(&log->write_lock);
    bool truncated = log->truncations != truncations;
    if (rc != 0) {
        partition_log_mark_offline(log, "flushing", rc);
    } else if (!truncated && atomic_load(&log->recovery_point) < end) {
        /* A truncation meanwhile may have replaced what we synced: then the
         * recovery point stays where the truncation left it. */
        atomic_store(&log->recovery_point, end);
        if (atomic_load(&log->log_end_offset) == end) {
            log->unflushed_records = 0;
            log->first_unflushed_ms = -1;
        }
    }
    pthread_mutex_unlock(&log->write_lock);
    if (rc != 0)
        code = KAFKA_ERR_KAFKA_STORAGE_ERROR;
    else if (truncated || end < end_offset)
        code = KAFKA_ERR_NOT_LEADER_OR_FOLLOWER; /* records cut away */
out:
    pthread_mutex_unlock(&log->flush_lock);
    return code;
}

int16_t partition_log_flush_rolled(struct partition_log *log)
{
    if (!atomic_load(&log->loaded))
        return KAFKA_ERR_NONE; /* nothing unflushed or due in a log not loaded */
    int64_t upto = atomic_exchange(&log->rolled_unflushed, -1);
    if (upto < 0 || atomic_load(&log->offline) || atomic_load(&log->deleted))
        return KAFKA_ERR_NONE;
    pthread_mutex_lock(&log->write_lock);
    uint64_t truncations = log->truncations;
    int64_t from = atomic_load(&log->recovery_point);
    /* Closed segments do not change, so their files can be synced without
     * holding any lock: duplicate the descriptors under the write lock
     * (retention may close the originals meanwhile). */
    size_t first = partition_log_segment_for(log, from), n = 0;
    int *fds = NULL;
    /* A file that cannot be duplicated is a file not synced: the recovery
     * point then stays and the flush is retried at the next tick. */
    bool missed = false;
    if (upto > from && first < log->segment_count) {
        fds = malloc(3 * log->segment_count * sizeof *fds);
        missed = fds == NULL;
        for (size_t i = first; fds && !missed && i < log->segment_count && log->segments[i]->base_offset < upto; i++) {
            const struct log_segment *seg = log->segments[i];
            int src[3] = {seg->log_fd, seg->index_fd, seg->time_fd};
            for (int k = 0; k < 3 && !missed; k++)
                if (src[k] >= 0 && (fds[n] = dup(src[k])) >= 0)
                    n++;
                else if (src[k] >= 0)
                    missed = true;
        }
    }
    pthread_mutex_unlock(&log->write_lock);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        if (rc == 0 && !missed && fdatasync(fds[i]) != 0)
            rc = errno;
        close(fds[i]);
    }
    free(fds);
    if (rc == 0 && !missed && n > 0)
        rc = partition_log_sync_new_dir(log);
    if (missed) {
        int64_t none = -1;
        atomic_compare_exchange_strong(&log->rolled_unflushed, &none, upto);
        logger_warn("log", "%s: cannot open rolled segments for syncing; recovery point kept", log->dir);
        return KAFKA_ERR_NONE;
    }
    if (n == 0)
        return KAFKA_ERR_NONE;
    if (rc != 0) {
        partition_log_mark_offline(log, "flushing a rolled segment", rc);
        return KAFKA_ERR_KAFKA_STORAGE_ERROR;
    }
    pthread_mutex_lock(&log->write_lock);
    /* A truncation in between may have replaced what was synced. */
    if (log->truncations == truncations && upto <= atomic_load(&log->log_end_offset) &&
        upto > atomic_load(&log->recovery_point))
        atomic_store(&log->recovery_point, upto);
    pthread_mutex_unlock(&log->write_lock);
    return KAFKA_ERR_NONE;
}

int16_t partition_log_flush_locked(struct partition_log *log)
{
    LOCK_ASSERT_HELD(&log->write_lock);
    int64_t end = atomic_load(&log->log_end_offset);
    int64_t from = atomic_load(&log->recovery_point);
    if (end == from && log->first_unflushed_ms < 0)
        return KAFKA_ERR_NONE;
    /* The segment array only changes under write_lock, which we hold. */
    for (size_t i = partition_log_segment_for(log, from); i < log->segment_count; i++) {
        int rc = log_segment_flush(log->segments[i]);
        if (rc != 0) {
            partition_log_mark_offline(log, "flushing", rc);
            return KAFKA_ERR_KAFKA_STORAGE_ERROR;
        }
    }
    int rc = partition_log_sync_new_dir(log);
    if (rc != 0) {
        partition_log_mark_offline(log, "syncing the partition directory", rc);
        return KAFKA_ERR_KAFKA_STORAGE_ERROR;
    }
    atomic_store(&log->recovery_point, end);
    log->unflushed_records = 0;
    log->first_unflushed_ms = -1;
    return KAFKA_ERR_NONE;
}

int16_t partition_log_flush(struct partition_log *log)
{
    if (!atomic_load(&log->loaded))
        return KAFKA_ERR_NONE; /* nothing unflushed or due in a log not loaded */
    pthread_mutex_lock(&log->write_lock);
    int16_t code = atomic_load(&log->offline) ? KAFKA_ERR_KAFKA_STORAGE_ERROR : partition_log_flush_locked(log);
    pthread_mutex_unlock(&log->write_lock);
    return code;
}

int16_t partition_log_flush_records(struct partition_log *log)
{
    if (!atomic_load(&log->loaded))
        return KAFKA_ERR_NONE; /* nothing unflushed or due in a log not loaded */
    int16_t code = KAFKA_ERR_NONE;
    pthread_mutex_lock(&log->write_lock);
    if (atomic_load(&log->offline)) {
        code = KAFKA_ERR_KAFKA_STORAGE_ERROR;
    } else {
        /* Segments from the recovery point on are rescanned after an unclean
         * stop, so their indexes need no sync here. */
        int64_t from = atomic_load(&log->recovery_point);
        for (size_t i = partition_log_segment_for(log, from); i < log->segment_count; i++) {
            int rc = log_segment_flush_data(log->segments[i]);
            if (rc != 0) {
                partition_log_mark_offline(log, "flushing", rc);
                code = KAFKA_ERR_KAFKA_STORAGE_ERROR;
                break;
            }
        }
        int rc = code == KAFKA_ERR_NONE ? partition_log_sync_new_dir(log) : 0;
        if (rc != 0) {
            partition_log_mark_offline(log, "syncing the partition directory", rc);
            code = KAFKA_ERR_KAFKA_STORAGE_ERROR;
        }
    }
    pthread_mutex_unlock(&log->write_lock);
    return code;
}

int16_t partition_log_flush_if_due(struct partition_log *log, int64_t now_ms)
{
    if (!atomic_load(&log->loaded))
        return KAFKA_ERR_NONE; /* nothing unflushed or due in a log not loaded */
    int16_t code = KAFKA_ERR_NONE;
    pthread_mutex_lock(&log->write_lock);
    if (!atomic_load(&log->offline) && log->first_unflushed_ms >= 0 &&
        now_ms - log->first_unflushed_ms >= log->cfg.flush_ms)
        code = partition_log_flush_locked(log);
    pthread_mutex_unlock(&log->write_lock);
    return code;
}

int partition_log_roll_if_due(struct partition_log *log, int64_t now_ms)
{
    if (!atomic_load(&log->loaded))
        return 0; /* nothing unflushed or due in a log not loaded */
    int rolled = 0;
    pthread_mutex_lock(&log->write_lock);
    struct log_segment *active = log->segments[log->segment_count - 1];
    if (!atomic_load(&log->offline) && active->size > 0 && now_ms - active->created_ms > log->cfg.segment_ms)
        rolled = partition_log_roll_locked(log, now_ms) == 0 ? 1 : 0;
    pthread_mutex_unlock(&log->write_lock);
    return rolled;
}
