/* Partition log: open/recovery, append, read, roll and lifetime.
 * Maintenance (retention, truncation, timestamps, epochs, metadata) lives in
 * partition_log_maint.c, batch validation in partition_log_validate.c,
 * flushing in partition_log_flush.c. */
#include "log/partition_log_internal.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log/log_cleaner.h"
#include "protocol/generated/errors.h"
#include "util/clock.h"
#include "util/lock_check.h"
#include "util/logger.h"

#define LOG_READ_SCAN_BUF (16 * 1024)

void partition_log_mark_offline(struct partition_log *log, const char *what, int err)
{
    if (!atomic_exchange(&log->offline, true))
        logger_error("log", "%s: %s failed (%s); partition is offline", log->dir, what, strerror(err));
}

static int push_segment(struct partition_log *log, struct log_segment *seg)
{
    if (log->segment_count == log->segment_cap) {
        size_t cap = log->segment_cap ? log->segment_cap * 2 : 8;
        struct log_segment **grown = realloc(log->segments, cap * sizeof *grown);
        if (!grown)
            return ENOMEM;
        log->segments = grown;
        log->segment_cap = cap;
    }
    log->segments[log->segment_count++] = seg;
    return 0;
}

void partition_log_free(struct partition_log *log)
{
    for (size_t i = 0; i < log->segment_count; i++)
        log_segment_close(log->segments[i], false);
    free(log->segments);
    leader_epoch_cache_free(&log->epochs);
    producer_state_free(log->producers);
    free(log->verify_guards);
    txn_index_free(&log->aborted);
    pthread_mutex_destroy(&log->write_lock);
    pthread_mutex_destroy(&log->flush_lock);
    pthread_mutex_destroy(&log->load_lock);
    pthread_rwlock_destroy(&log->lock);
    free(log->dir);
    free(log->removal_dir);
    free(log);
}

static int load_segments(struct partition_log *log, int64_t recovery_point, char *err, size_t errlen)
{
    int64_t now = clock_wall_ms();
    struct partition_dir_scan scan;
    int rc = partition_dir_scan(log->dir, &scan);
    if (rc != 0) {
        snprintf(err, errlen, "cannot list %s: %s", log->dir, strerror(rc));
        return rc;
    }
    /* Finish or undo what a cleaner pass left behind before reading segments. */
    if (partition_log_clean_recover_files(log->dir, &scan, &log->cfg, now, err, errlen) < 0) {
        partition_dir_scan_free(&scan);
        return EIO;
    }
    const int64_t *bases = scan.segments.bases;
    size_t n = scan.segments.count;
    for (size_t i = 0; i < n; i++) {
        bool is_last = i + 1 == n;
        bool rebuild = recovery_point >= 0 && (is_last || bases[i + 1] > recovery_point);
        bool truncated = false;
        struct log_segment *seg;
        rc = log_segment_open(log->dir, bases[i], &log->cfg, rebuild, is_last, now, &seg, &truncated, err, errlen);
        if (rc == 0 && (rc = push_segment(log, seg)) != 0)
            log_segment_close(seg, false);
        if (rc != 0)
            break;
        if (rebuild)
            log->recovery.scanned_bytes += seg->size;
        if (!is_last && !rebuild)
            seg->next_offset = bases[i + 1];
        if (truncated && !is_last) {
            /* Nothing after a corrupt batch is reachable: drop later segments. */
            for (size_t j = i + 1; j < n; j++) {
                struct log_segment *later;
                bool t2;
                if (log_segment_open(log->dir, bases[j], &log->cfg, false, false, now, &later, &t2, err, errlen) == 0) {
                    logger_warn("log", "%s: removing segment %" PRId64 " after corruption", log->dir, bases[j]);
                    log_segment_close(later, true);
                }
            }
            break;
        }
    }
    partition_dir_scan_free(&scan);
    if (rc != 0)
        return rc;
    if (log->segment_count == 0) {
        struct log_segment *seg;
        rc = log_segment_create(log->dir, 0, &log->cfg, now, &seg, err, errlen);
        if (rc == 0 && (rc = push_segment(log, seg)) != 0)
            log_segment_close(seg, true);
        atomic_store(&log->dir_unsynced, true);
    }
    return rc;
}

struct partition_log *partition_log_alloc(const char *dir, const struct log_config *cfg)
{
    struct partition_log *log = calloc(1, sizeof *log);
    if (!log || !(log->dir = strdup(dir))) {
        free(log);
        return NULL;
    }
    log->cfg = *cfg;
    pthread_mutex_init(&log->write_lock, NULL);
    pthread_mutex_init(&log->flush_lock, NULL);
    pthread_mutex_init(&log->load_lock, NULL);
    pthread_rwlock_init(&log->lock, NULL);
    atomic_init(&log->refcount, 1);
    atomic_init(&log->rolled_unflushed, -1);
    atomic_init(&log->remote_start_offset, -1);
    atomic_init(&log->remote_copied_end, -1);
    atomic_init(&log->remote_floor, -1);
    atomic_init(&log->copy_claimed_end, -1);
    atomic_init(&log->remote_published, false);
    atomic_init(&log->clean_checkpoint, -1);
    log->first_unflushed_ms = -1;
    atomic_init(&log->first_unstable_offset, -1);
    atomic_init(&log->hw_tracks_end, true);
    atomic_init(&log->dir_unsynced, false);
    atomic_init(&log->loaded, true);
    log->deferred_leader_epoch = -1;
    return log;
}

int partition_log_open_from(const char *dir, const struct log_config *cfg, int64_t recovery_point,
                            struct partition_log **out, char *err, size_t errlen)
{
    /* A new partition's directory, empty segment and small files are not
     * synced one by one: until its first flush the log holds nothing
     * acknowledged as durable, and after a crash the metadata replay opens
     * (or recreates) whatever part of it reached the disk. The first flush
     * syncs the directory and its parent before it moves the recovery
     * point (partition_log_sync_new_dir). */
    bool created = mkdir(dir, 0755) == 0;
    if (!created && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
        return KAFKA_ERR_KAFKA_STORAGE_ERROR;
    }
    struct partition_log *log = partition_log_alloc(dir, cfg);
    if (!log) {
        snprintf(err, errlen, "out of memory");
        return KAFKA_ERR_KAFKA_STORAGE_ERROR;
    }
    atomic_init(&log->dir_unsynced, created);
    int64_t t0 = clock_mono_ns();
    if (load_segments(log, recovery_point, err, errlen) != 0) {
        partition_log_free(log);
        return KAFKA_ERR_KAFKA_STORAGE_ERROR;
    }
    struct log_segment *active = log->segments[log->segment_count - 1];
    atomic_store(&log->log_start_offset, log->segments[0]->base_offset);
    atomic_store(&log->log_end_offset, active->next_offset);
    int64_t end = active->next_offset;
    int64_t t1 = clock_mono_ns();
    if (recovery_point >= 0) {
        log->recovery.scan_ns = t1 - t0;
        /* The rescanned data is whole but possibly not on disk yet. Rather
         * than make start-up wait for the disk (fdatasync of everything
         * written since the last flush), keep the recovery point where the
         * checkpoint had it: a crash before the next flush rescans the same
         * bytes again, and the flush policy (or a clean stop) writes them. */
        int64_t durable = recovery_point < end ? recovery_point : end;
        if (durable < log->segments[0]->base_offset)
            durable = log->segments[0]->base_offset;
        atomic_store(&log->recovery_point, durable);
        if (durable < end)
            log->first_unflushed_ms = clock_wall_ms();
    } else {
        atomic_store(&log->recovery_point, end);
    }
    /* Nobody else sees the log yet; the lock is taken for the *_locked
     * contracts, which debug builds check. */
    pthread_mutex_lock(&log->write_lock);
    int rc = partition_log_open_epochs_locked(log, recovery_point, err, errlen);
    if (rc != 0) {
        pthread_mutex_unlock(&log->write_lock);
        partition_log_free(log);
        return KAFKA_ERR_KAFKA_STORAGE_ERROR;
    }
    rc = partition_log_load_producers_locked(log);
    pthread_mutex_unlock(&log->write_lock);
    if (recovery_point >= 0)
        log->recovery.producers_ns = clock_mono_ns() - t1;
    if (rc != 0) {
        snprintf(err, errlen, "cannot load producer state of %s: %s", dir, strerror(rc));
        partition_log_free(log);
        return KAFKA_ERR_KAFKA_STORAGE_ERROR;
    }
    *out = log;
    return KAFKA_ERR_NONE;
}

int partition_log_open(const char *dir, const struct log_config *cfg, bool recover, struct partition_log **out,
                       char *err, size_t errlen)
{
    return partition_log_open_from(dir, cfg, recover ? 0 : -1, out, err, errlen);
}

void partition_log_recovery_stats(const struct partition_log *log, struct partition_log_recovery_stats *out)
{
    *out = log->recovery;
}

void partition_log_retain(struct partition_log *log)
{
    atomic_fetch_add(&log->refcount, 1);
}

void partition_log_remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *ent;
    char path[4096];
    while ((ent = readdir(d)) != NULL) {
        if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
        if (unlink(path) != 0)
            logger_warn("log", "cannot remove %s: %s", path, strerror(errno));
    }
    closedir(d);
    if (rmdir(dir) != 0)
        logger_warn("log", "cannot remove %s: %s", dir, strerror(errno));
}

void partition_log_close(struct partition_log *log)
{
    if (!log || atomic_fetch_sub(&log->refcount, 1) != 1)
        return;
    if (atomic_load(&log->deleted)) {
        /* A moved directory goes whole: the segments' own paths name the
         * old place, which a new incarnation may hold by now. */
        for (size_t i = 0; i < log->segment_count; i++)
            log_segment_close(log->segments[i], log->removal_dir == NULL);
        log->segment_count = 0;
        partition_log_remove_dir(log->removal_dir ? log->removal_dir : log->dir);
    } else if (atomic_load(&log->loaded) && !atomic_load(&log->offline)) {
        /* A log never loaded has nothing unflushed and no new producer state. */
        pthread_mutex_lock(&log->write_lock);
        if (partition_log_flush_locked(log) == KAFKA_ERR_NONE)
            partition_log_snapshot_producers_locked(log);
        pthread_mutex_unlock(&log->write_lock);
    }
    partition_log_free(log);
}

void partition_log_delete(struct partition_log *log)
{
    /* Move the directory aside at once, as Kafka renames it to
     * "-delete": a reference held past the deletion (a response still being
     * sent, a cleaner pass) would otherwise remove, when it goes, the
     * directory of a topic created meanwhile under the same name. */
    char *moved = NULL;
    uint64_t id = 0;
    if (getrandom(&id, sizeof id, 0) != (ssize_t)sizeof id)
        id = (uint64_t)clock_mono_ns() ^ (uint64_t)(uintptr_t)log;
    if (asprintf(&moved, "%s.%016" PRIx64 "%s", log->dir, id, PARTITION_LOG_DELETED_SUFFIX) >= 0 &&
        rename(log->dir, moved) == 0) {
        log->removal_dir = moved;
    } else {
        if (moved && errno != ENOENT)
            logger_warn("log", "cannot move %s aside for deletion: %s", log->dir, strerror(errno));
        free(moved);
    }
    atomic_store(&log->deleted, true);
    partition_log_close(log);
}

int partition_log_roll_locked(struct partition_log *log, int64_t now_ms)
{
    LOCK_ASSERT_HELD(&log->write_lock);
    struct log_segment *old = log->segments[log->segment_count - 1];
    int64_t base = atomic_load(&log->log_end_offset);
    if (old->size == 0)
        return 0;
    int rc = log_segment_seal(old);
    if (rc != 0) {
        partition_log_mark_offline(log, "sealing the time index", rc);
        return rc;
    }
    struct log_segment *seg;
    char err[256];
    rc = log_segment_create(log->dir, base, &log->cfg, now_ms, &seg, err, sizeof err);
    if (rc != 0) {
        logger_error("log", "%s", err);
        partition_log_mark_offline(log, "rolling a segment", rc);
        return rc;
    }
    pthread_rwlock_wrlock(&log->lock);
    rc = push_segment(log, seg);
    pthread_rwlock_unlock(&log->lock);
    if (rc != 0) {
        log_segment_close(seg, true);
        return rc;
    }
    logger_debug("log", "%s: rolled new segment at offset %" PRId64, log->dir, base);
    atomic_store(&log->rolled_unflushed, base);
    /* The state as of the new segment's base: recovery replays from here. */
    partition_log_snapshot_producers_locked(log);
    return 0;
}

static bool roll_due(const struct partition_log *log, const struct log_segment *seg, size_t incoming,
                     int64_t last_offset, int64_t now_ms)
{
    if (seg->size == 0)
        return false;
    /* Wall-clock age of the segment: client timestamps may be arbitrary. */
    int64_t since = seg->created_ms;
    return seg->size > log->cfg.segment_bytes - (int64_t)incoming || seg->size + (int64_t)incoming > INT32_MAX ||
           now_ms - since > log->cfg.segment_ms || log_segment_index_full(seg, &log->cfg) ||
           last_offset - seg->base_offset > (int64_t)UINT32_MAX;
}

static int16_t append_guarded(struct partition_log *log, enum log_append_origin origin, uint8_t *batches, size_t len,
                              int32_t leader_epoch, const uint64_t *guard, struct log_append_result *res)
{
    memset(res, 0, sizeof *res);
    res->base_offset = res->last_offset = res->log_append_time = -1;
    res->record_index = -1;
    if (partition_log_ensure_loaded(log) != 0) {
        snprintf(res->error_message, sizeof res->error_message, "cannot load the partition");
        return KAFKA_ERR_KAFKA_STORAGE_ERROR;
    }
    res->log_start_offset = atomic_load(&log->log_start_offset);
    if (atomic_load(&log->offline) || atomic_load(&log->deleted)) {
        snprintf(res->error_message, sizeof res->error_message, "partition is offline");
        return KAFKA_ERR_KAFKA_STORAGE_ERROR;
    }
    if ((int64_t)len > log->cfg.segment_bytes || len > INT32_MAX) {
        snprintf(res->error_message, sizeof res->error_message, "%zu bytes do not fit in a segment", len);
        return KAFKA_ERR_RECORD_LIST_TOO_LARGE;
    }
    int32_t records = 0, batch_count = 0;
    int16_t code = partition_log_validate_all(log, origin, batches, len, &records, &batch_count, res);
    if (code != KAFKA_ERR_NONE || batch_count == 0)
        return code;

    pthread_mutex_lock(&log->write_lock);
    if (atomic_load(&log->offline)) {
        pthread_mutex_unlock(&log->write_lock);
        return KAFKA_ERR_KAFKA_STORAGE_ERROR;
    }
    if (origin == LOG_APPEND_REPLICATION) {
        code = partition_log_append_follower_locked(log, batches, len, records, res);
        pthread_mutex_unlock(&log->write_lock);
        return code;
    }
    bool duplicate = false;
    code = partition_log_check_producers_locked(log, batches, len, origin == LOG_APPEND_COORDINATOR, &duplicate, res);
    if (code == KAFKA_ERR_NONE && !duplicate && guard)
        code = partition_log_check_verification_locked(log, batches, len, guard, res);
    if (code != KAFKA_ERR_NONE || duplicate) {
        pthread_mutex_unlock(&log->write_lock);
        /* A retried batch: answer with where it already is, write nothing. */
        if (duplicate)
            res->log_start_offset = atomic_load(&log->log_start_offset);
        return code;
    }
    code = partition_log_append_locked(log, batches, len, leader_epoch, records, res);
    pthread_mutex_unlock(&log->write_lock);
    return code;
}

int16_t partition_log_append_as(struct partition_log *log, enum log_append_origin origin, uint8_t *batches, size_t len,
                                int32_t leader_epoch, struct log_append_result *res)
{
    return append_guarded(log, origin, batches, len, leader_epoch, NULL, res);
}

int16_t partition_log_append_verified(struct partition_log *log, uint8_t *batches, size_t len, int32_t leader_epoch,
                                      uint64_t guard, struct log_append_result *res)
{
    return append_guarded(log, LOG_APPEND_CLIENT, batches, len, leader_epoch, &guard, res);
}

int16_t partition_log_append(struct partition_log *log, uint8_t *batches, size_t len, int32_t leader_epoch,
                             struct log_append_result *res)
{
    return partition_log_append_as(log, LOG_APPEND_CLIENT, batches, len, leader_epoch, res);
}

int16_t partition_log_append_coordinator(struct partition_log *log, uint8_t *batches, size_t len, int32_t leader_epoch,
                                         struct log_append_result *res)
{
    return partition_log_append_as(log, LOG_APPEND_COORDINATOR, batches, len, leader_epoch, res);
}

int16_t partition_log_write_batches_locked(struct partition_log *log, const uint8_t *batches, size_t len,
                                           int64_t last_offset, int32_t records, int64_t now, bool follower,
                                           struct log_append_result *res)
{
    LOCK_ASSERT_HELD(&log->write_lock);
    struct log_segment *active = log->segments[log->segment_count - 1];
    if (roll_due(log, active, len, last_offset, now)) {
        if (partition_log_roll_locked(log, now) != 0)
            return KAFKA_ERR_KAFKA_STORAGE_ERROR;
        active = log->segments[log->segment_count - 1];
    }
    int rc = log_segment_write(active, batches, len);
    if (rc != 0) {
        partition_log_mark_offline(log, "writing the log", rc);
        snprintf(res->error_message, sizeof res->error_message, "write failed: %s", strerror(rc));
        return KAFKA_ERR_KAFKA_STORAGE_ERROR;
    }
    if (!follower) {
        partition_log_note_open_txns_locked(log, batches, len);
    } else if ((rc = partition_log_replay_batches_locked(log, batches, len)) != 0) {
        /* Written but not published: the log end stays, the log goes offline. */
        partition_log_mark_offline(log, "recording the producer state", rc);
        snprintf(res->error_message, sizeof res->error_message, "cannot record the producer state: %s", strerror(rc));
        return KAFKA_ERR_KAFKA_STORAGE_ERROR;
    }
    pthread_rwlock_wrlock(&log->lock);
    rc = log_segment_commit(active, batches, len, &log->cfg);
    atomic_store(&log->log_end_offset, last_offset + 1);
    pthread_rwlock_unlock(&log->lock);
    if (rc != 0) /* The data is durable-able; only the sparse index lost an entry. */
        logger_warn("log", "%s: index write failed: %s", log->dir, strerror(rc));
    if (!follower)
        partition_log_update_producers_locked(log, batches, len);

    log->unflushed_records += records;
    if (log->first_unflushed_ms < 0)
        log->first_unflushed_ms = now;
    int16_t code = KAFKA_ERR_NONE;
    if (log->unflushed_records >= log->cfg.flush_messages)
        code = partition_log_flush_locked(log);
    /* Published: the offsets hold even when the flush failed. */
    struct record_batch_header first;
    record_batch_parse_header(batches, len, &first);
    res->base_offset = first.base_offset;
    res->last_offset = last_offset;
    res->log_start_offset = atomic_load(&log->log_start_offset);
    res->record_count = records;
    return code;
}

int16_t partition_log_append_locked(struct partition_log *log, uint8_t *batches, size_t len, int32_t leader_epoch,
                                    int32_t records, struct log_append_result *res)
{
    LOCK_ASSERT_HELD(&log->write_lock);
    int16_t code;
    int64_t now = clock_wall_ms();
    bool append_time = log->cfg.message_timestamp_type == LOG_TIMESTAMP_LOG_APPEND_TIME;
    int64_t base = atomic_load(&log->log_end_offset), next = base;
    struct record_batch_iter it;
    uint8_t *batch;
    size_t blen;
    record_batch_iter_init(&it, batches, len);
    while (record_batch_iter_next(&it, (const uint8_t **)&batch, &blen) == 1) {
        struct record_batch_header h;
        record_batch_parse_header(batch, blen, &h);
        record_batch_set_base_offset(batch, next);
        if (leader_epoch >= 0)
            record_batch_set_partition_leader_epoch(batch, leader_epoch);
        if (append_time)
            record_batch_set_log_append_time(batch, blen, now);
        next += (int64_t)h.last_offset_delta + 1;
    }
    /* Before the data, as Kafka does: a reader never sees records of an
     * epoch the cache does not know yet. */
    code = partition_log_assign_epochs_locked(log, batches, len, leader_epoch);
    if (code != KAFKA_ERR_NONE) {
        snprintf(res->error_message, sizeof res->error_message, "cannot record the leader epoch");
        return code;
    }
    code = partition_log_write_batches_locked(log, batches, len, next - 1, records, now, false, res);
    if (res->base_offset >= 0)
        res->log_append_time = append_time ? now : -1;
    return code;
}

/* Index of the last segment with base_offset <= offset (0 if none). */
size_t partition_log_segment_for(const struct partition_log *log, int64_t offset)
{
    size_t lo = 0, hi = log->segment_count;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (log->segments[mid]->base_offset <= offset)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

int16_t partition_log_read(struct partition_log *log, int64_t fetch_offset, int32_t max_bytes,
                           int64_t max_offset_exclusive, struct log_read_result *out)
{
    memset(out, 0, sizeof *out);
    out->fd = -1;
    if (partition_log_ensure_loaded(log) != 0)
        return KAFKA_ERR_KAFKA_STORAGE_ERROR;
    if (atomic_load(&log->offline) || atomic_load(&log->deleted))
        return KAFKA_ERR_KAFKA_STORAGE_ERROR;
    pthread_rwlock_rdlock(&log->lock);
    int64_t start = atomic_load(&log->log_start_offset);
    int64_t end = atomic_load(&log->log_end_offset);
    out->log_start_offset = start;
    out->log_end_offset = end;
    out->next_offset = fetch_offset;
    if (fetch_offset < start || fetch_offset > end) {
        pthread_rwlock_unlock(&log->lock);
        return KAFKA_ERR_OFFSET_OUT_OF_RANGE;
    }
    int16_t code = KAFKA_ERR_NONE;
    for (size_t i = partition_log_segment_for(log, fetch_offset);
         fetch_offset < end && fetch_offset < max_offset_exclusive && i < log->segment_count; i++) {
        struct log_segment *seg = log->segments[i];
        struct log_scanner scan;
        struct record_batch_header h;
        int64_t pos;
        log_scanner_init(&scan, seg->log_fd, seg->size, LOG_READ_SCAN_BUF);
        int found = log_segment_find(seg, fetch_offset, &scan, &pos, &h);
        if (found == 0) {
            log_scanner_free(&scan);
            continue;
        }
        int64_t first = pos, total = 0, next = fetch_offset;
        while (found == 1 && record_batch_last_offset(&h) < max_offset_exclusive) {
            int64_t size = (int64_t)record_batch_total_size(&h);
            if (total > 0 && total + size > (int64_t)max_bytes)
                break;
            total += size;
            pos += size;
            next = record_batch_last_offset(&h) + 1;
            if (pos >= seg->size)
                break;
            const uint8_t *p = log_scanner_get(&scan, pos, RECORD_BATCH_HEADER_SIZE);
            if (!p)
                found = -1;
            else
                record_batch_parse_header(p, RECORD_BATCH_HEADER_SIZE, &h);
        }
        log_scanner_free(&scan);
        if (found < 0) {
            code = KAFKA_ERR_KAFKA_STORAGE_ERROR;
        } else if (total > 0) {
            out->fd = dup(seg->log_fd);
            if (out->fd < 0) {
                code = KAFKA_ERR_KAFKA_STORAGE_ERROR;
            } else {
                out->file_pos = first;
                out->len = total;
                out->next_offset = next;
            }
        }
        break;
    }
    pthread_rwlock_unlock(&log->lock);
    return code;
}

int64_t partition_log_start_offset(struct partition_log *log)
{
    int64_t local = atomic_load(&log->log_start_offset);
    int64_t remote = atomic_load(&log->remote_start_offset);
    int64_t start = remote >= 0 && remote < local ? remote : local;
    int64_t floor = atomic_load(&log->remote_floor);
    return floor > start && floor < local ? floor : start;
}

int64_t partition_log_local_start_offset(struct partition_log *log)
{
    return atomic_load(&log->log_start_offset);
}

int64_t partition_log_end_offset(struct partition_log *log)
{
    return atomic_load(&log->log_end_offset);
}

int64_t partition_log_recovery_point(struct partition_log *log)
{
    return atomic_load(&log->recovery_point);
}

int64_t partition_log_size_bytes(struct partition_log *log)
{
    /* DescribeLogDirs asks for every partition: not a reason to load them. */
    if (!atomic_load(&log->loaded))
        return partition_log_deferred_size(log);
    int64_t total = 0;
    pthread_rwlock_rdlock(&log->lock);
    for (size_t i = 0; i < log->segment_count; i++)
        total += log->segments[i]->size;
    pthread_rwlock_unlock(&log->lock);
    return total;
}

int partition_log_segment_count(struct partition_log *log)
{
    if (partition_log_ensure_loaded(log) != 0)
        return 0;
    pthread_rwlock_rdlock(&log->lock);
    int n = (int)log->segment_count;
    pthread_rwlock_unlock(&log->lock);
    return n;
}

const char *partition_log_dir(const struct partition_log *log)
{
    return log->dir;
}

bool partition_log_is_offline(struct partition_log *log)
{
    return atomic_load(&log->offline);
}
