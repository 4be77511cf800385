/* Partition log maintenance: retention, start-offset moves, truncation,
 * timestamp lookups and partition.metadata. The leader epoch cache is in
 * partition_log_epochs.c. */
#include "log/partition_log_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codec/record_codec.h"
#include "log/log_checkpoint.h"
#include "protocol/generated/errors.h"
#include "util/clock.h"
#include "util/logger.h"

#define LOG_TS_SCAN_BUF (64 * 1024)

void partition_log_remove_first_segment(struct partition_log *log)
{
    struct log_segment *seg = log->segments[0];
    memmove(log->segments, log->segments + 1, (log->segment_count - 1) * sizeof *log->segments);
    log->segment_count--;
    int64_t first = log->segments[0]->base_offset;
    /* Their .txnindex goes with the segment. */
    txn_index_drop_before(&log->aborted, first);
    if (atomic_load(&log->log_start_offset) < first)
        atomic_store(&log->log_start_offset, first);
    /* Open dup()ed fds held by readers keep the unlinked data alive. */
    log_segment_close(seg, true);
}

int partition_log_apply_retention(struct partition_log *log, int64_t now_ms)
{
    /* An empty log not loaded has no closed segment to delete; any other
     * needs its segments' timestamps and sizes. */
    if (!atomic_load(&log->loaded) && atomic_load(&log->log_start_offset) == atomic_load(&log->log_end_offset))
        return 0;
    if (partition_log_ensure_loaded(log) != 0)
        return 0;
    int deleted = 0;
    bool epochs_moved = false;
    pthread_mutex_lock(&log->write_lock);
    int64_t total = 0;
    for (size_t i = 0; i < log->segment_count; i++)
        total += log->segments[i]->size;
    /* Tiered: the local tail follows local.retention.* (-2: as retention.*);
     * the whole log's retention is the remote log manager's. */
    bool tiered = log->cfg.remote_storage_enable;
    int64_t retention_ms = log->cfg.retention_ms, retention_bytes = log->cfg.retention_bytes;
    if (tiered && log->cfg.local_retention_ms != -2)
        retention_ms = log->cfg.local_retention_ms;
    if (tiered && log->cfg.local_retention_bytes != -2)
        retention_bytes = log->cfg.local_retention_bytes;
    while (log->segment_count > 1 && !atomic_load(&log->offline)) {
        struct log_segment *oldest = log->segments[0];
        /* A compact-only topic keeps every segment; the cleaner shrinks them.
         * Tiered, its local copies of copied segments go by local retention. */
        bool delete_policy = log->cfg.cleanup_delete || tiered;
        /* An empty closed segment (everything cleaned away) has no timestamp. */
        bool by_time = delete_policy && retention_ms >= 0 &&
                       ((oldest->max_timestamp >= 0 && now_ms - oldest->max_timestamp > retention_ms) ||
                        oldest->size == 0);
        bool by_size = delete_policy && retention_bytes >= 0 && total - oldest->size >= retention_bytes;
        /* Segments wholly below a DeleteRecords start offset go too. */
        bool below_start = log->segments[1]->base_offset <= atomic_load(&log->log_start_offset);
        /* Never drop a tiered segment whose remote copy is not confirmed. */
        if (tiered && !below_start && oldest->next_offset > atomic_load(&log->remote_copied_end))
            break;
        if (!by_time && !by_size && !below_start)
            break;
        total -= oldest->size;
        logger_info("log", "%s: deleting segment %" PRId64 " (%s)", log->dir, oldest->base_offset,
                    by_time   ? (tiered ? "local.retention.ms" : "retention.ms")
                    : by_size ? (tiered ? "local.retention.bytes" : "retention.bytes")
                              : "log start offset");
        pthread_rwlock_wrlock(&log->lock);
        partition_log_remove_first_segment(log);
        epochs_moved |= partition_log_epochs_start_moved(log, atomic_load(&log->log_start_offset));
        pthread_rwlock_unlock(&log->lock);
        deleted++;
    }
    if (epochs_moved)
        partition_log_save_epochs_locked(log);
    if (deleted > 0)
        partition_log_remove_old_snapshots_locked(log);
    pthread_mutex_unlock(&log->write_lock);
    return deleted;
}

int partition_log_closed_segments(struct partition_log *log, struct log_segment_info **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    if (partition_log_ensure_loaded(log) != 0)
        return EIO;
    pthread_rwlock_rdlock(&log->lock);
    size_t n = log->segment_count > 0 ? log->segment_count - 1 : 0;
    struct log_segment_info *infos = n > 0 ? calloc(n, sizeof *infos) : NULL;
    if (n > 0 && !infos) {
        pthread_rwlock_unlock(&log->lock);
        return ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const struct log_segment *seg = log->segments[i];
        infos[i] = (struct log_segment_info){
            .base_offset = seg->base_offset,
            .next_offset = seg->next_offset,
            .size = seg->size,
            .max_timestamp = seg->max_timestamp,
        };
    }
    pthread_rwlock_unlock(&log->lock);
    /* .txnindex files exist only for segments holding an abort marker. */
    for (size_t i = 0; i < n; i++) {
        char *path = log_segment_path(log->dir, infos[i].base_offset, ".txnindex");
        infos[i].has_txn_index = path && access(path, F_OK) == 0;
        free(path);
    }
    *out = infos;
    *count = n;
    return 0;
}

void partition_log_set_remote_offsets(struct partition_log *log, int64_t remote_start, int64_t copied_end)
{
    atomic_store(&log->remote_start_offset, remote_start);
    atomic_store(&log->remote_copied_end, copied_end);
    atomic_store(&log->remote_published, true);
}

int64_t partition_log_tier_floor(struct partition_log *log)
{
    int64_t copied = atomic_load(&log->remote_copied_end);
    int64_t claimed = atomic_load(&log->copy_claimed_end);
    return copied > claimed ? copied : claimed;
}

int partition_log_claim_for_copy(struct partition_log *log, struct log_segment_info *info)
{
    if (partition_log_ensure_loaded(log) != 0)
        return EIO;
    int rc = ENOENT;
    pthread_mutex_lock(&log->write_lock);
    pthread_rwlock_rdlock(&log->lock);
    for (size_t i = 0; i + 1 < log->segment_count; i++) {
        const struct log_segment *seg = log->segments[i];
        if (seg->base_offset != info->base_offset)
            continue;
        info->next_offset = seg->next_offset;
        info->size = seg->size;
        info->max_timestamp = seg->max_timestamp;
        /* A compacted log copies only what the cleaner has cleaned: the
         * segment ends at or below the first dirty offset it worked from. */
        int64_t cleaned_to = atomic_load(&log->clean_checkpoint);
        rc = log->cfg.cleanup_compact && (cleaned_to < 0 || seg->next_offset > cleaned_to) ? EAGAIN : 0;
        if (rc == 0 && atomic_load(&log->copy_claimed_end) < seg->next_offset)
            atomic_store(&log->copy_claimed_end, seg->next_offset);
        break;
    }
    pthread_rwlock_unlock(&log->lock);
    pthread_mutex_unlock(&log->write_lock);
    if (rc == 0) { /* a pass may have merged .txnindex files before the claim */
        char *path = log_segment_path(log->dir, info->base_offset, ".txnindex");
        info->has_txn_index = path && access(path, F_OK) == 0;
        free(path);
    }
    return rc;
}

int64_t partition_log_remote_copied_end(struct partition_log *log)
{
    return atomic_load(&log->remote_copied_end);
}

int64_t partition_log_remote_floor(struct partition_log *log)
{
    return atomic_load(&log->remote_floor);
}

int16_t partition_log_delete_records_before(struct partition_log *log, int64_t offset)
{
    if (partition_log_ensure_loaded(log) != 0)
        return KAFKA_ERR_KAFKA_STORAGE_ERROR;
    pthread_mutex_lock(&log->write_lock);
    int16_t code = KAFKA_ERR_NONE;
    if (atomic_load(&log->offline)) {
        code = KAFKA_ERR_KAFKA_STORAGE_ERROR;
    } else if (offset > atomic_load(&log->log_end_offset) || offset < 0) {
        code = KAFKA_ERR_OFFSET_OUT_OF_RANGE;
    } else if (offset <= atomic_load(&log->log_start_offset)) {
        /* Below the local start: only remote segments hold it; the remote
         * log manager deletes those wholly below the new start. */
        if (offset > atomic_load(&log->remote_floor))
            atomic_store(&log->remote_floor, offset);
    } else {
        pthread_rwlock_wrlock(&log->lock);
        atomic_store(&log->log_start_offset, offset);
        while (log->segment_count > 1 && log->segments[1]->base_offset <= offset) {
            logger_info("log", "%s: deleting segment %" PRId64 " (log start offset %" PRId64 ")", log->dir,
                        log->segments[0]->base_offset, offset);
            partition_log_remove_first_segment(log);
        }
        bool epochs_moved = partition_log_epochs_start_moved(log, offset);
        pthread_rwlock_unlock(&log->lock);
        if (epochs_moved)
            code = partition_log_save_epochs_locked(log);
        partition_log_remove_old_snapshots_locked(log);
    }
    pthread_mutex_unlock(&log->write_lock);
    return code;
}

void partition_log_restore_start_offset(struct partition_log *log, int64_t offset)
{
    /* Only forward of the local start: a checkpoint may have been written
     * before the remote start was known, and the remote log manager
     * restores a DeleteRecords start below the local one itself. */
    if (offset > atomic_load(&log->log_start_offset) && offset <= atomic_load(&log->log_end_offset))
        partition_log_delete_records_before(log, offset);
}

int16_t partition_log_truncate_to(struct partition_log *log, int64_t offset)
{
    if (partition_log_ensure_loaded(log) != 0)
        return KAFKA_ERR_KAFKA_STORAGE_ERROR;
    pthread_mutex_lock(&log->write_lock);
    if (atomic_load(&log->offline)) {
        pthread_mutex_unlock(&log->write_lock);
        return KAFKA_ERR_KAFKA_STORAGE_ERROR;
    }
    if (offset < 0) {
        pthread_mutex_unlock(&log->write_lock);
        return KAFKA_ERR_NONE;
    }
    if (offset >= atomic_load(&log->log_end_offset)) {
        /* No record to cut, but, as Kafka's truncateTo, an epoch entry at
         * the log end goes: one this replica began as leader without
         * writing in it, which the new leader may never have had; kept, a
         * follower would name it in every fetch and get the same
         * divergence back forever. */
        pthread_rwlock_wrlock(&log->lock);
        bool cut = partition_log_epochs_end_moved(log, atomic_load(&log->log_end_offset));
        pthread_rwlock_unlock(&log->lock);
        int16_t code = cut ? partition_log_save_epochs_locked(log) : KAFKA_ERR_NONE;
        pthread_mutex_unlock(&log->write_lock);
        return code;
    }
    int rc = 0;
    bool epochs_cut = false;
    log->truncations++;
    atomic_store(&log->clean_checkpoint, -1); /* the cleaner sets it again */
    pthread_rwlock_wrlock(&log->lock);
    while (log->segment_count > 1 && log->segments[log->segment_count - 1]->base_offset >= offset)
        log_segment_close(log->segments[--log->segment_count], true);
    struct log_segment *last = log->segments[log->segment_count - 1];
    if (last->base_offset >= offset) {
        /* Nothing survives: start over with an empty segment at offset. */
        struct log_segment *fresh;
        char err[256];
        log_segment_close(last, true);
        log->segment_count = 0;
        rc = log_segment_create(log->dir, offset, &log->cfg, clock_wall_ms(), &fresh, err, sizeof err);
        if (rc == 0) {
            log->segments[log->segment_count++] = fresh;
            atomic_store(&log->log_start_offset, offset);
        }
    } else {
        rc = log_segment_truncate_to(last, offset, &log->cfg);
        log_segment_drop_epoch_marks(last);
    }
    if (rc == 0) {
        int64_t end = log->segments[log->segment_count - 1]->next_offset;
        atomic_store(&log->log_end_offset, end);
        /* The one way the high watermark moves back. */
        if (atomic_load(&log->high_watermark) > end)
            atomic_store(&log->high_watermark, end);
        if (atomic_load(&log->recovery_point) > end)
            atomic_store(&log->recovery_point, end);
        epochs_cut = partition_log_epochs_end_moved(log, end);
    }
    pthread_rwlock_unlock(&log->lock);
    if (epochs_cut && partition_log_save_epochs_locked(log) != KAFKA_ERR_NONE)
        rc = EIO;
    if (rc == 0) {
        /* Forget the cut batches: snapshots past the end go, the state is rebuilt. */
        rc = partition_log_load_producers_locked(log);
    }
    if (rc != 0)
        partition_log_mark_offline(log, "truncating", rc);
    pthread_mutex_unlock(&log->write_lock);
    return rc == 0 ? KAFKA_ERR_NONE : KAFKA_ERR_KAFKA_STORAGE_ERROR;
}

/* The records of the batch at pos, decompressed (at most limit bytes) when
 * the batch is compressed; *plain is the heap copy to free, if any. NULL
 * when the bytes cannot be read or decompressed. */
static const uint8_t *batch_records(struct log_scanner *scan, int64_t pos, const struct record_batch_header *h,
                                    size_t limit, uint8_t **plain, size_t *len)
{
    size_t total = record_batch_total_size(h);
    const uint8_t *p = log_scanner_get(scan, pos, total);
    *plain = NULL;
    *len = total;
    if (!p || record_batch_compression(h) == RECORD_BATCH_COMPRESSION_NONE)
        return p;
    char err[160];
    if (record_codec_inflate_batch(p, total, limit, plain, len, err, sizeof err) != 0) {
        free(*plain);
        *plain = NULL;
        return NULL;
    }
    return *plain;
}

/* Within one batch at pos: the first record with timestamp >= ts, also
 * inside compressed batches, as Kafka answers. A compressed batch whose
 * records cannot be opened answers as a whole (its base offset and max
 * timestamp) when whole_batch_ok, else not at all. */
static bool match_in_batch(struct log_scanner *scan, int64_t pos, const struct record_batch_header *h, int64_t ts,
                           int64_t min_offset, size_t limit, bool whole_batch_ok, int64_t *offset, int64_t *timestamp)
{
    uint8_t *plain;
    size_t len;
    const uint8_t *p = batch_records(scan, pos, h, limit, &plain, &len);
    struct record_batch_record_iter it;
    struct record_batch_record rec;
    bool found = false;
    if (p && record_batch_records_begin(&it, p, len) == 0) {
        while (!found && record_batch_records_next(&it, &rec) == 1)
            if (rec.timestamp >= ts && rec.offset >= min_offset) {
                *offset = rec.offset;
                *timestamp = rec.timestamp;
                found = true;
            }
    } else if (whole_batch_ok && record_batch_compression(h) != RECORD_BATCH_COMPRESSION_NONE) {
        *offset = h->base_offset > min_offset ? h->base_offset : min_offset;
        *timestamp = h->max_timestamp;
        found = true;
    }
    free(plain);
    return found;
}

/* Most bytes a compressed batch of this log may open to. */
static size_t decompressed_limit(struct partition_log *log)
{
    struct log_config cfg;
    partition_log_get_config(log, &cfg);
    return log_decompressed_limit(&cfg);
}

int16_t partition_log_offset_for_timestamp(struct partition_log *log, int64_t ts, int64_t *offset, int64_t *timestamp)
{
    *offset = -1;
    *timestamp = -1;
    if (partition_log_ensure_loaded(log) != 0)
        return KAFKA_ERR_KAFKA_STORAGE_ERROR;
    if (atomic_load(&log->offline))
        return KAFKA_ERR_KAFKA_STORAGE_ERROR;
    size_t limit = decompressed_limit(log);
    pthread_rwlock_rdlock(&log->lock);
    int64_t start = atomic_load(&log->log_start_offset);
    bool done = false;
    for (size_t i = 0; i < log->segment_count && !done; i++) {
        struct log_segment *seg = log->segments[i];
        if (seg->size == 0 || seg->max_timestamp < ts)
            continue;
        int64_t from = log_segment_time_lookup(seg, ts);
        if (from < start)
            from = start;
        struct log_scanner scan;
        struct record_batch_header h;
        int64_t pos;
        log_scanner_init(&scan, seg->log_fd, seg->size, LOG_TS_SCAN_BUF);
        int found = log_segment_find(seg, from, &scan, &pos, &h);
        while (found == 1 && !done) {
            if (h.max_timestamp >= ts)
                done = match_in_batch(&scan, pos, &h, ts, start, limit, true, offset, timestamp);
            pos += (int64_t)record_batch_total_size(&h);
            if (done || pos >= seg->size)
                break;
            const uint8_t *p = log_scanner_get(&scan, pos, RECORD_BATCH_HEADER_SIZE);
            if (!p)
                break;
            record_batch_parse_header(p, RECORD_BATCH_HEADER_SIZE, &h);
        }
        log_scanner_free(&scan);
    }
    pthread_rwlock_unlock(&log->lock);
    return KAFKA_ERR_NONE;
}

int16_t partition_log_max_timestamp(struct partition_log *log, int64_t *offset, int64_t *timestamp)
{
    *offset = -1;
    *timestamp = -1;
    if (partition_log_ensure_loaded(log) != 0)
        return KAFKA_ERR_KAFKA_STORAGE_ERROR;
    size_t limit = decompressed_limit(log);
    pthread_rwlock_rdlock(&log->lock);
    struct log_segment *holder = NULL;
    for (size_t i = 0; i < log->segment_count; i++) {
        struct log_segment *seg = log->segments[i];
        if (seg->size > 0 && seg->offset_of_max_timestamp >= 0 && seg->max_timestamp > *timestamp) {
            *timestamp = seg->max_timestamp;
            *offset = seg->offset_of_max_timestamp;
            holder = seg;
        }
    }
    /* The segment knows the batch (by its last offset); the answer is the
     * batch's first record with that timestamp, as Kafka gives it. */
    if (holder) {
        struct log_scanner scan;
        struct record_batch_header h;
        int64_t pos, ts = *timestamp, found_ts = -1;
        log_scanner_init(&scan, holder->log_fd, holder->size, LOG_TS_SCAN_BUF);
        if (log_segment_find(holder, *offset, &scan, &pos, &h) == 1 && h.max_timestamp == ts &&
            record_batch_last_offset(&h) == *offset) {
            int64_t first = -1;
            if (match_in_batch(&scan, pos, &h, ts, h.base_offset, limit, false, &first, &found_ts))
                *offset = first;
        }
        log_scanner_free(&scan);
    }
    pthread_rwlock_unlock(&log->lock);
    return KAFKA_ERR_NONE;
}

/* ---- partition.metadata ---- */

static char *dir_file(const struct partition_log *log, const char *name)
{
    char *path = NULL;
    if (asprintf(&path, "%s/%s", log->dir, name) < 0)
        return NULL;
    return path;
}

static const char base64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int partition_log_write_metadata(struct partition_log *log, const uint8_t topic_id[16])
{
    char encoded[23];
    size_t n = 0;
    for (size_t i = 0; i < 16; i += 3) {
        uint32_t v = (uint32_t)topic_id[i] << 16;
        if (i + 1 < 16)
            v |= (uint32_t)topic_id[i + 1] << 8;
        if (i + 2 < 16)
            v |= topic_id[i + 2];
        encoded[n++] = base64url[(v >> 18) & 63];
        encoded[n++] = base64url[(v >> 12) & 63];
        if (i + 1 < 16)
            encoded[n++] = base64url[(v >> 6) & 63];
        if (i + 2 < 16)
            encoded[n++] = base64url[v & 63];
    }
    encoded[n] = '\0';
    char text[64];
    int len = snprintf(text, sizeof text, "version: 0\ntopic_id: %s\n", encoded);
    char *path = dir_file(log, "partition.metadata");
    /* Unsynced in a log not yet flushed since its creation: a file lost or
     * left empty by a crash reads as no topic id, and log_manager_create
     * writes it again when the metadata replay opens the partition. */
    int rc = !path                             ? ENOMEM
             : atomic_load(&log->dir_unsynced) ? log_file_write_atomic_unsynced(path, text, (size_t)len)
                                               : log_file_write_atomic(path, text, (size_t)len);
    free(path);
    return rc;
}

int partition_log_topic_id(struct partition_log *log, uint8_t topic_id[16])
{
    char *path = dir_file(log, "partition.metadata");
    char *text;
    size_t len;
    if (!path || log_file_read_all(path, 4096, &text, &len) != 0) {
        free(path);
        return -1;
    }
    free(path);
    const char *p = strstr(text, "topic_id: ");
    int rc = -1;
    if (strncmp(text, "version: 0\n", 11) == 0 && p) {
        p += strlen("topic_id: ");
        uint32_t acc = 0;
        int bits = 0;
        size_t out = 0, i;
        for (i = 0; i < 22; i++) {
            const char *hit = p[i] ? strchr(base64url, p[i]) : NULL;
            if (!hit)
                break;
            acc = acc << 6 | (uint32_t)(hit - base64url);
            bits += 6;
            if (bits >= 8) {
                bits -= 8;
                if (out < 16)
                    topic_id[out++] = (uint8_t)(acc >> bits);
                acc &= (1u << bits) - 1;
            }
        }
        if (i == 22 && out == 16 && (p[22] == '\n' || p[22] == '\0'))
            rc = 0;
    }
    free(text);
    return rc;
}
