/* Copying closed segments out, and deleting remote segments, on a copier
 * thread that holds the partition (p->busy): nothing else changes p->segs
 * meanwhile, and readers take p->lock for a consistent view.
 *
 * A copy is first recorded as COPY_SEGMENT_STARTED (so a crash leaves a
 * name to clean up, never a counted copy), then handed to the plugin, then
 * recorded as COPY_SEGMENT_FINISHED; only then does the local log learn it
 * may delete the segment. A delete is recorded as DELETE_SEGMENT_STARTED
 * (never served again) before the plugin deletes, and dropped after. */
#include "tiered/tiered_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "log/leader_epoch_cache.h"
#include "util/clock.h"
#include "util/logger.h"

static void publish(struct tiered_partition *p, struct partition_log *log)
{
    int64_t start, end;
    pthread_mutex_lock(&p->lock);
    tiered_partition_offsets_locked(p, &start, &end);
    pthread_mutex_unlock(&p->lock);
    partition_log_set_remote_offsets(log, start, end);
}

static ssize_t index_of(const struct tiered_partition *p, const uint8_t id[16])
{
    for (size_t i = 0; i < p->count; i++)
        if (memcmp(p->segs[i].id, id, 16) == 0)
            return (ssize_t)i;
    return -1;
}

static void remove_at_locked(struct tiered_partition *p, size_t i)
{
    tiered_segment_free(&p->segs[i]);
    memmove(p->segs + i, p->segs + i + 1, (p->count - i - 1) * sizeof *p->segs);
    p->count--;
}

/* This broker's role for p now; the leader epoch in *epoch. */
static enum tiered_role role_of(struct tiered *t, struct tiered_partition *p, int32_t *epoch, int32_t *replicas)
{
    *epoch = 0;
    *replicas = 1;
    if (!t->opts.role)
        return TIERED_ROLE_LEADER;
    return t->opts.role(t->opts.ctx, p->topic, p->partition, epoch, replicas);
}

#define SAVE_LOST_LEAD 1 /* save's answer when this broker no longer leads */

/* The list, in the store's manifest first for a replicated partition (a
 * change counts only once the other replicas can see it), then durable
 * here: the local file never claims a copy the manifest does not, so a
 * restart never trims local data on an unconfirmed copy. A broker that
 * lost the lead writes nothing and gets SAVE_LOST_LEAD. */
static int save(struct tiered *t, struct tiered_partition *p)
{
    if (p->replicated) {
        int32_t epoch, replicas;
        if (role_of(t, p, &epoch, &replicas) != TIERED_ROLE_LEADER || epoch != p->leading_epoch) {
            logger_info("tiered", "%s-%" PRId32 ": no longer leader at epoch %" PRId32 "; the list stays unpublished",
                        p->topic, p->partition, p->leading_epoch);
            return SAVE_LOST_LEAD;
        }
        if (tiered_manifest_write(t, p, epoch) != 0)
            return -1;
    }
    char err[512] = "";
    pthread_mutex_lock(&p->lock);
    int rc = tiered_metadata_save(p, err, sizeof err);
    pthread_mutex_unlock(&p->lock);
    if (rc != 0)
        logger_error("tiered", "%s-%" PRId32 ": cannot save the remote segment list: %s", p->topic, p->partition, err);
    return rc;
}

/* Deletes segment i (by id, as the list may shift) from the store and the
 * list. Returns 0, or -1 when the plugin failed or the store is backing off
 * (the entry stays in the durable list, for a later pass). */
static int delete_one(struct tiered *t, struct tiered_partition *p, size_t i, const char *why)
{
    if (!tiered_store_admit(t))
        return -1; /* the store is backing off: the entry stays for a later pass */
    uint8_t id[16];
    pthread_mutex_lock(&p->lock);
    memcpy(id, p->segs[i].id, 16);
    bool was_started = p->segs[i].state == TIERED_DELETE_STARTED;
    p->segs[i].state = TIERED_DELETE_STARTED;
    pthread_mutex_unlock(&p->lock);
    if (!was_started && save(t, p) != 0)
        return -1;
    struct cairn_remote_segment view;
    pthread_mutex_lock(&p->lock);
    ssize_t at = index_of(p, id);
    struct tiered_segment copy = p->segs[at];
    pthread_mutex_unlock(&p->lock);
    /* copy's arrays stay valid: only this thread frees them. */
    tiered_segment_view(t, p, &copy, &view);
    char err[512] = "";
    int rc = t->rsm->delete_segment(t->rsm_instance, &view, err, sizeof err);
    tiered_store_note(t, rc);
    if (rc != CAIRN_OK) {
        tiered_count_error(t, TIERED_OP_DELETE, tiered_error_kind_of(rc));
        logger_warn("tiered", "%s-%" PRId32 ": deleting remote segment at %" PRId64 " failed (%d): %s", p->topic,
                    p->partition, copy.start_offset, rc, err);
        return -1;
    }
    pthread_mutex_lock(&p->lock);
    remove_at_locked(p, (size_t)index_of(p, id));
    pthread_mutex_unlock(&p->lock);
    metrics_add(t->metrics.segments_deleted, 1);
    logger_info("tiered", "%s-%" PRId32 ": deleted remote segment %" PRId64 "-%" PRId64 " (%s)", p->topic, p->partition,
                copy.start_offset, copy.end_offset, why);
    return save(t, p);
}

/* Entries a crash or a failure left unfinished: their objects go. */
static void clean_unfinished(struct tiered *t, struct tiered_partition *p)
{
    for (size_t i = 0; i < p->count;) {
        if (p->segs[i].state == TIERED_COPY_FINISHED) {
            i++;
            continue;
        }
        if (delete_one(t, p, i, "unfinished copy or delete") != 0)
            i++;
    }
}

/* leader-epoch-checkpoint text (version 0) for the entries that start
 * below end, and the segment's own epochs (those overlapping [base, end),
 * the first moved up to base). */
static char *epoch_checkpoint(const struct leader_epoch_entry *e, size_t n, int64_t base, int64_t end,
                              struct tiered_segment *s, size_t *len)
{
    size_t kept = 0;
    while (kept < n && e[kept].start_offset < end)
        kept++;
    char *text = malloc(32 + kept * 40);
    s->epochs = calloc(kept ? kept : 1, sizeof *s->epochs);
    s->epoch_starts = calloc(kept ? kept : 1, sizeof *s->epoch_starts);
    if (!text || !s->epochs || !s->epoch_starts) {
        free(text);
        tiered_segment_free(s);
        return NULL;
    }
    int used = sprintf(text, "0\n%zu\n", kept);
    for (size_t i = 0; i < kept; i++) {
        used += sprintf(text + used, "%" PRId32 " %" PRId64 "\n", e[i].epoch, e[i].start_offset);
        bool overlaps = i + 1 == kept || e[i + 1].start_offset > base;
        if (overlaps) {
            s->epochs[s->epoch_count] = e[i].epoch;
            s->epoch_starts[s->epoch_count] = e[i].start_offset > base ? e[i].start_offset : base;
            s->epoch_count++;
        }
    }
    *len = (size_t)used;
    return text;
}

static char *segment_file(struct partition_log *log, int64_t offset, const char *ext)
{
    char *path = NULL;
    if (asprintf(&path, "%s/%020" PRId64 "%s", partition_log_dir(log), offset, ext) < 0)
        return NULL;
    return path;
}

/* Copies one closed segment. Returns 0 when its copy is recorded
 * COPY_SEGMENT_FINISHED, -1 otherwise (retried next pass). */
static int copy_one(struct tiered *t, struct tiered_partition *p, struct partition_log *log,
                    const struct log_segment_info *info)
{
    struct tiered_segment s = {
        .start_offset = info->base_offset,
        .end_offset = info->next_offset - 1,
        .max_timestamp_ms = info->max_timestamp,
        .size_bytes = info->size,
        .event_timestamp_ms = clock_wall_ms(),
        .broker_id = t->opts.node_id,
        .state = TIERED_COPY_STARTED,
    };
    if (getrandom(s.id, sizeof s.id, 0) != (ssize_t)sizeof s.id)
        return -1;
    struct leader_epoch_entry *entries = NULL;
    size_t entry_count = 0;
    if (partition_log_epoch_entries(log, &entries, &entry_count) != 0)
        return -1;
    size_t checkpoint_len = 0;
    char *checkpoint = epoch_checkpoint(entries, entry_count, info->base_offset, info->next_offset, &s,
                                        &checkpoint_len);
    free(entries);
    if (!checkpoint)
        return -1;
    pthread_mutex_lock(&p->lock);
    int rc = 0;
    if (p->count == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 16;
        struct tiered_segment *grown = realloc(p->segs, cap * sizeof *grown);
        if (grown) {
            p->segs = grown;
            p->cap = cap;
        } else {
            rc = -1;
        }
    }
    if (rc == 0)
        p->segs[p->count++] = s; /* the list owns s's arrays from here */
    pthread_mutex_unlock(&p->lock);
    if (rc != 0) {
        tiered_segment_free(&s);
        free(checkpoint);
        return -1;
    }
    if (save(t, p) != 0) {
        pthread_mutex_lock(&p->lock);
        remove_at_locked(p, (size_t)index_of(p, s.id));
        pthread_mutex_unlock(&p->lock);
        free(checkpoint);
        return -1;
    }

    char *log_path = segment_file(log, info->base_offset, ".log");
    char *index_path = segment_file(log, info->base_offset, ".index");
    char *time_path = segment_file(log, info->base_offset, ".timeindex");
    char *txn_path = info->has_txn_index ? segment_file(log, info->base_offset, ".txnindex") : NULL;
    if (txn_path) {
        struct txn_index idx = {0};
        int loaded = txn_index_load_file(&idx, txn_path);
        pthread_mutex_lock(&p->lock);
        struct tiered_segment *entry = &p->segs[index_of(p, s.id)];
        entry->aborted = idx.entries; /* the list owns them (freed with the entry) */
        entry->aborted_count = idx.count;
        pthread_mutex_unlock(&p->lock);
        if (loaded != 0) {
            logger_warn("tiered", "%s: cannot read: %s", txn_path, strerror(loaded));
            rc = -1;
        }
    }
    char *snapshot_path = segment_file(log, info->next_offset, ".snapshot");
    if (snapshot_path && access(snapshot_path, F_OK) != 0) {
        free(snapshot_path); /* recovery may have pruned it; the plugin is told there is none */
        snapshot_path = NULL;
    }
    struct cairn_remote_segment_files files = {
        .struct_size = sizeof files,
        .log_path = log_path,
        .offset_index_path = index_path,
        .time_index_path = time_path,
        .txn_index_path = txn_path,
        .producer_snapshot_path = snapshot_path,
        .leader_epoch_checkpoint = (const uint8_t *)checkpoint,
        .leader_epoch_checkpoint_len = checkpoint_len,
    };
    struct cairn_remote_segment view;
    pthread_mutex_lock(&p->lock);
    struct tiered_segment copy = p->segs[index_of(p, s.id)];
    pthread_mutex_unlock(&p->lock);
    tiered_segment_view(t, p, &copy, &view);
    uint8_t custom[TIERED_CUSTOM_METADATA_MAX];
    size_t custom_len = sizeof custom;
    char err[512] = "";
    rc = rc == 0 && log_path && index_path && time_path
             ? t->rsm->copy_segment(t->rsm_instance, &view, &files, custom, &custom_len, err, sizeof err)
             : CAIRN_ERROR;
    tiered_store_note(t, rc);
    free(log_path);
    free(index_path);
    free(time_path);
    free(txn_path);
    free(snapshot_path);
    free(checkpoint);
    if (rc != CAIRN_OK || custom_len > sizeof custom) {
        if (rc == CAIRN_OK)
            rc = CAIRN_INVALID;
        tiered_count_error(t, TIERED_OP_COPY, tiered_error_kind_of(rc));
        logger_warn("tiered", "%s-%" PRId32 ": copying segment %" PRId64 " to %s failed (%d): %s", p->topic,
                    p->partition, info->base_offset, t->plugin_name, rc, err);
        pthread_mutex_lock(&p->lock);
        ssize_t at = index_of(p, s.id);
        pthread_mutex_unlock(&p->lock);
        /* Skipped while the store backs off; the entry (COPY_STARTED, in
         * the saved list) is cleaned up once the store answers again. */
        delete_one(t, p, (size_t)at, "failed copy");
        return -1;
    }
    pthread_mutex_lock(&p->lock);
    struct tiered_segment *entry = &p->segs[index_of(p, s.id)];
    entry->state = TIERED_COPY_FINISHED;
    memcpy(entry->custom, custom, custom_len);
    entry->custom_len = custom_len;
    pthread_mutex_unlock(&p->lock);
    int saved = save(t, p);
    if (saved == SAVE_LOST_LEAD) {
        /* Copied while leading, never to be listed: the new leader may not
         * know this copy, so it goes now (its id is this attempt's alone). */
        pthread_mutex_lock(&p->lock);
        ssize_t at = index_of(p, s.id);
        struct tiered_segment mine = p->segs[at];
        pthread_mutex_unlock(&p->lock);
        tiered_segment_view(t, p, &mine, &view);
        int deleted = t->rsm->delete_segment(t->rsm_instance, &view, err, sizeof err);
        tiered_store_note(t, deleted);
        if (deleted != CAIRN_OK)
            logger_warn("tiered", "%s-%" PRId32 ": the copy at %" PRId64 " made before losing the lead stays: %s",
                        p->topic, p->partition, info->base_offset, err);
        pthread_mutex_lock(&p->lock);
        remove_at_locked(p, (size_t)index_of(p, s.id));
        pthread_mutex_unlock(&p->lock);
        return -1;
    }
    if (saved != 0) {
        /* Not durable: not copied, so local retention keeps the segment. */
        pthread_mutex_lock(&p->lock);
        p->segs[index_of(p, s.id)].state = TIERED_COPY_STARTED;
        pthread_mutex_unlock(&p->lock);
        return -1;
    }
    metrics_add(t->metrics.segments_copied, 1);
    metrics_add(t->metrics.bytes_copied, info->size);
    logger_debug("tiered", "%s-%" PRId32 ": copied segment %" PRId64 "-%" PRId64 " (%" PRId64 " bytes)", p->topic,
                 p->partition, info->base_offset, info->next_offset - 1, info->size);
    return 0;
}

/* Kafka's RLMCopyTask: before each segment, wait while the broker's copy
 * rate is over remote.log.manager.copy.max.bytes.per.second, then count
 * the segment's bytes at once, so copiers of other partitions see them
 * before the copy ends. False when stopping. */
static bool copy_quota_allows(struct tiered *t, int64_t bytes)
{
    pthread_mutex_lock(&t->lock);
    int64_t wait_ms;
    while (!t->stopping && (wait_ms = tiered_quota_throttle_ms(&t->copy_quota)) > 0) {
        int64_t started = clock_mono_ms();
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        int64_t ns = until.tv_nsec + (wait_ms % 1000) * 1000000;
        until.tv_sec += (time_t)(wait_ms / 1000 + ns / 1000000000);
        until.tv_nsec = (long)(ns % 1000000000);
        pthread_cond_timedwait(&t->quota_wake, &t->lock, &until);
        metrics_add(t->metrics.copy_throttle_ms, clock_mono_ms() - started);
    }
    bool go = !t->stopping;
    if (go) /* under the lock: two copiers never both pass on the same room */
        tiered_quota_record(&t->copy_quota, bytes);
    pthread_mutex_unlock(&t->lock);
    return go;
}

static void copy_eligible(struct tiered *t, struct tiered_partition *p, struct partition_log *log)
{
    int64_t hw = partition_log_high_watermark(log);
    int64_t lso = partition_log_last_stable_offset(log);
    int64_t bound = lso < hw ? lso : hw;
    struct log_segment_info *segs = NULL;
    size_t n = 0;
    if (partition_log_closed_segments(log, &segs, &n) != 0)
        return;
    int64_t start, copied_end;
    pthread_mutex_lock(&p->lock);
    tiered_partition_offsets_locked(p, &start, &copied_end);
    pthread_mutex_unlock(&p->lock);
    size_t lag = 0;
    int64_t lag_bytes = 0;
    bool stalled = false;
    for (size_t i = 0; i < n; i++) {
        if (segs[i].next_offset <= copied_end || segs[i].next_offset > bound)
            continue;
        /* The claim keeps the cleaner off the segment from here on, and
         * refreshes segs[i] from the live segment (a pass may have rewritten
         * it since the listing). A compacted segment waits for its cleaning. */
        if (!stalled && !t->stopping && partition_log_claim_for_copy(log, &segs[i]) != 0)
            stalled = true;
        /* While the store backs off, the segment stays local and waits
         * (the quota is not charged for a copy not tried). */
        if (stalled || t->stopping || segs[i].next_offset > bound || !tiered_store_admit(t) ||
            !copy_quota_allows(t, segs[i].size) || copy_one(t, p, log, &segs[i]) != 0) {
            stalled = true; /* in order: a later segment waits for this one */
            lag++;
            lag_bytes += segs[i].size;
            continue;
        }
        copied_end = segs[i].next_offset;
        publish(p, log);
    }
    pthread_mutex_lock(&t->lock);
    p->copy_lag = (int64_t)lag;
    p->copy_lag_bytes = lag_bytes;
    int64_t total = 0, total_bytes = 0;
    for (size_t i = 0; i < t->part_count; i++) {
        total += t->parts[i]->copy_lag;
        total_bytes += t->parts[i]->copy_lag_bytes;
    }
    pthread_mutex_unlock(&t->lock);
    metrics_set(t->metrics.copy_lag_segments, total);
    metrics_set(t->metrics.copy_lag_bytes, total_bytes);
    free(segs);
}

/* retention.ms / retention.bytes over the whole log: the oldest remote
 * segments go first. */
static void remote_retention(struct tiered *t, struct tiered_partition *p, struct partition_log *log,
                             const struct log_config *cfg, int64_t now_ms)
{
    for (;;) {
        int64_t start, copied_end;
        struct log_segment_info *segs = NULL;
        size_t n = 0;
        if (partition_log_closed_segments(log, &segs, &n) != 0)
            return;
        pthread_mutex_lock(&p->lock);
        tiered_partition_offsets_locked(p, &start, &copied_end);
        /* Whole-log size: remote segments plus the local data not copied. */
        int64_t total = partition_log_size_bytes(log);
        for (size_t i = 0; i < n; i++)
            if (segs[i].next_offset <= copied_end)
                total -= segs[i].size;
        ssize_t oldest = -1;
        for (size_t i = 0; i < p->count; i++) {
            if (p->segs[i].state != TIERED_COPY_FINISHED)
                continue;
            total += p->segs[i].size_bytes;
            if (oldest < 0)
                oldest = (ssize_t)i;
        }
        bool by_time = false, by_size = false, by_start = false;
        int64_t oldest_end = -1;
        if (oldest >= 0) {
            const struct tiered_segment *s = &p->segs[oldest];
            oldest_end = s->end_offset;
            by_start = s->end_offset < partition_log_start_offset(log); /* DeleteRecords */
            by_time = cfg->cleanup_delete && cfg->retention_ms >= 0 && s->max_timestamp_ms >= 0 &&
                      now_ms - s->max_timestamp_ms > cfg->retention_ms;
            by_size = cfg->cleanup_delete && cfg->retention_bytes >= 0 && total - s->size_bytes >= cfg->retention_bytes;
        }
        pthread_mutex_unlock(&p->lock);
        free(segs);
        if ((!by_time && !by_size && !by_start) || t->stopping ||
            delete_one(t, p, (size_t)oldest,
                       by_start  ? "log start offset"
                       : by_time ? "retention.ms"
                                 : "retention.bytes") != 0)
            break;
        /* As Kafka's expiration task: the log now starts after what
         * retention took, locally too, so local segments it took are
         * deleted rather than copied again once the list is empty. */
        if (!by_start)
            partition_log_delete_records_before(log, oldest_end + 1);
        publish(p, log);
    }
}

/* A follower: the leader's manifest becomes the list, and the local log
 * learns the copied end the leader confirmed (local retention stays below
 * it). No manifest yet: nothing is confirmed, the log keeps everything. */
static void follow(struct tiered *t, struct tiered_partition *p, struct partition_log *log)
{
    p->leading_epoch = -1;
    pthread_mutex_lock(&t->lock);
    p->copy_lag = 0; /* the leader's to report */
    p->copy_lag_bytes = 0;
    pthread_mutex_unlock(&t->lock);
    if (!tiered_store_admit(t) || tiered_manifest_read(t, p) != 0)
        return;
    publish(p, log);
}

/* On taking the lead: the list the previous leader left in the store, so
 * copies continue from its copied end and its segments stay served. */
static int take_lead(struct tiered *t, struct tiered_partition *p, int32_t epoch)
{
    if (p->synced_epoch == epoch)
        return 0;
    if (!tiered_store_admit(t) || tiered_manifest_read(t, p) < 0)
        return -1; /* the store failed: copying now could duplicate; next pass */
    p->synced_epoch = epoch;
    p->leading_epoch = epoch;
    return 0;
}

void tiered_copy_partition(struct tiered *t, struct tiered_partition *p, int64_t now_ms)
{
    int32_t epoch, replicas;
    enum tiered_role role = role_of(t, p, &epoch, &replicas);
    if (role == TIERED_ROLE_NONE)
        return;
    p->replicated = t->opts.role != NULL && (replicas > 1 || p->manifest_epoch >= 0);
    struct partition_log *log = log_manager_get(t->opts.logs, p->topic, p->partition);
    if (!log)
        return;
    uint8_t id[16];
    if (partition_log_topic_id(log, id) != 0 || memcmp(id, p->topic_id, 16) != 0) {
        partition_log_close(log);
        return;
    }
    if (role == TIERED_ROLE_FOLLOWER) {
        p->synced_epoch = -1;
        follow(t, p, log);
        partition_log_close(log);
        return;
    }
    if (p->replicated && take_lead(t, p, epoch) != 0) {
        partition_log_close(log);
        return;
    }
    p->leading_epoch = epoch;
    if (p->replicated && p->manifest_epoch != epoch && save(t, p) != 0) {
        partition_log_close(log);
        return;
    }
    struct log_config cfg;
    partition_log_get_config(log, &cfg);
    /* A DeleteRecords start below the local one is kept with the list. */
    int64_t floor = partition_log_remote_floor(log);
    if (floor > p->log_start_offset) {
        pthread_mutex_lock(&p->lock);
        p->log_start_offset = floor;
        pthread_mutex_unlock(&p->lock);
        save(t, p);
    }
    /* Compacted topics too, unlike Kafka: a segment is copied once cleaned,
     * and the cleaner leaves it from its claim on (partition_log.h). */
    if (cfg.remote_storage_enable)
        copy_eligible(t, p, log);
    /* After the copies: while the store fails, a copy is what tries it
     * again, and the leftovers of failed copies go once one lands. */
    clean_unfinished(t, p);
    remote_retention(t, p, log, &cfg, now_ms);
    publish(p, log);
    partition_log_close(log);
}

void tiered_delete_partition(struct tiered *t, struct tiered_partition *p)
{
    for (size_t i = 0; i < p->count;)
        if (delete_one(t, p, i, "topic deleted") != 0)
            i++;
    if (p->count == 0 && tiered_store_admit(t) && tiered_manifest_delete(t, p) == 0) {
        if (unlink(p->meta_path) != 0 && errno != ENOENT)
            logger_warn("tiered", "cannot remove %s: %s", p->meta_path, strerror(errno));
        pthread_mutex_lock(&t->lock);
        p->gone = true;
        pthread_mutex_unlock(&t->lock);
    }
}
