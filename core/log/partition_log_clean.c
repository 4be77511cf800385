/* Compaction of one partition log: choosing the cleanable range, the
 * dedupe map, grouping segments and rewriting each group into one cleaned
 * file (see log_cleaner.h); partition_log_clean_swap.c swaps them in. */
#include "log/partition_log_clean_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codec/record_codec.h"
#include "log/log_clean_txn.h"
#include "log/log_cleaner.h"
#include "log/log_offset_map.h"
#include "log/log_throttler.h"
#include "util/lock_check.h"
#include "util/logger.h"

#define CLEAN_READ_BUF (1024 * 1024)
#define CLEAN_WRITE_BUF (1024 * 1024)
#define CLEAN_THROTTLE_CHUNK (64 * 1024) /* reads reported to the throttler at once */

/* ---- batch rewriting ---- */

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

int log_clean_filter_batch(const uint8_t *batch, size_t len, log_clean_keep_fn keep, void *arg, bool keep_empty,
                           uint8_t *out, size_t *out_len)
{
    struct record_batch_header h;
    if (record_batch_parse_header(batch, len, &h) != 0 || h.batch_length < 0 || record_batch_total_size(&h) != len)
        return -1;
    struct record_batch_record_iter it;
    if (record_batch_records_begin(&it, batch, len) != 0)
        return -1;
    size_t out_pos = RECORD_BATCH_HEADER_SIZE;
    int32_t kept = 0, seen = 0;
    struct record_batch_record rec;
    const uint8_t *start = it.pos;
    int rc;
    while ((rc = record_batch_records_next(&it, &rec)) == 1) {
        seen++;
        if (keep(arg, &rec)) {
            /* Deltas are relative to the unchanged base offset and base
             * timestamp, so a kept record's bytes stay valid as they are. */
            size_t n = (size_t)(it.pos - start);
            memcpy(out + out_pos, start, n);
            out_pos += n;
            kept++;
        }
        start = it.pos;
    }
    if (rc < 0)
        return -1;
    if (kept == seen)
        return LOG_CLEAN_BATCH_ALL;
    if (kept == 0 && !keep_empty)
        return LOG_CLEAN_BATCH_NONE;
    memcpy(out, batch, RECORD_BATCH_HEADER_SIZE);
    put_be32(out + RECORD_BATCH_OFFSET_BATCH_LENGTH, (uint32_t)(out_pos - RECORD_BATCH_LOG_OVERHEAD));
    put_be32(out + 57, (uint32_t)kept); /* recordCount */
    record_batch_update_crc(out, out_pos);
    *out_len = out_pos;
    return LOG_CLEAN_BATCH_SOME;
}

/* ---- what a pass works on, captured under write_lock ---- */

static void plan_free(struct clean_plan *p)
{
    for (size_t i = 0; i < p->count; i++)
        if (p->segs[i].fd >= 0)
            close(p->segs[i].fd);
    free(p->segs);
    free(p->groups);
    free(p->producers);
    free(p->aborted);
}

static void collect_producer(void *arg, const struct producer_entry *e)
{
    struct clean_plan *p = arg;
    if (e->batch_count <= 0 || p->producer_count == p->producer_cap)
        return;
    p->producers[p->producer_count++] = (struct producer_last){e->producer_id,
                                                               e->batches[e->batch_count - 1].last_offset};
}

static int cmp_producer(const void *a, const void *b)
{
    int64_t x = ((const struct producer_last *)a)->producer_id;
    int64_t y = ((const struct producer_last *)b)->producer_id;
    return (x > y) - (x < y);
}

static bool is_last_of_producer(const struct clean_plan *p, int64_t producer_id, int64_t last_offset)
{
    struct producer_last key = {producer_id, 0};
    const struct producer_last *hit = p->producer_count
                                          ? bsearch(&key, p->producers, p->producer_count, sizeof key, cmp_producer)
                                          : NULL;
    return hit && hit->last_offset == last_offset;
}

static bool is_aborted(const struct clean_plan *p, int64_t producer_id, int64_t offset)
{
    for (size_t i = 0; i < p->aborted_count; i++)
        if (p->aborted[i].producer_id == producer_id && p->aborted[i].first_offset <= offset &&
            offset < p->aborted[i].last_offset)
            return true;
    return false;
}

/* Caller holds write_lock. Metadata only: no file is read. */
static void dirtiness_locked(struct partition_log *log, int64_t first_dirty, int64_t now_ms,
                             struct log_clean_dirtiness *d)
{
    LOCK_ASSERT_HELD(&log->write_lock);
    memset(d, 0, sizeof *d);
    const struct log_config *cfg = &log->cfg;
    size_t n = log->segment_count;
    int64_t start = atomic_load(&log->log_start_offset);
    int64_t end = atomic_load(&log->log_end_offset);
    if (first_dirty < start || first_dirty > end)
        first_dirty = start;
    /* Tiered: segments below the tier floor are copied or being copied, and
     * were cleaned before their copy; the cleaner leaves them as they are. */
    int64_t tier_floor = partition_log_tier_floor(log);
    if (first_dirty < tier_floor && tier_floor <= end)
        first_dirty = tier_floor;
    d->first_dirty_offset = first_dirty;
    d->cleanable_end = first_dirty;
    if (!cfg->cleanup_compact || n < 2 || atomic_load(&log->offline) || atomic_load(&log->deleted))
        return;
    /* Until the remote log manager has said what is copied (after a start),
     * a tiered log is not touched: a pass could merge copied segments. */
    if (cfg->remote_storage_enable && !atomic_load(&log->remote_published))
        return;
    atomic_store(&log->clean_checkpoint, first_dirty);
    size_t skip = 0;
    while (skip + 1 < n && log->segments[skip]->base_offset < tier_floor)
        skip++;
    d->first_cleanable_segment = skip;

    /* Never the active segment, nor offsets of open transactions, nor
     * records younger than min.compaction.lag.ms. */
    int64_t uncleanable = log->segments[n - 1]->base_offset;
    int64_t unstable = atomic_load(&log->first_unstable_offset);
    if (unstable >= 0 && unstable < uncleanable)
        uncleanable = unstable;
    if (cfg->min_compaction_lag_ms > 0) {
        for (size_t i = skip; i + 1 < n; i++) {
            const struct log_segment *s = log->segments[i];
            if (log->segments[i + 1]->base_offset <= first_dirty)
                continue;
            if (s->max_timestamp > now_ms - cfg->min_compaction_lag_ms) {
                if (s->base_offset < uncleanable)
                    uncleanable = s->base_offset;
                break;
            }
        }
    }
    size_t k = 0;
    while (k + 1 < n && log->segments[k + 1]->base_offset <= uncleanable)
        k++;
    d->cleanable_segments = k;
    d->first_dirty_segment = k;
    if (k <= skip)
        return;
    d->cleanable_end = log->segments[k]->base_offset;

    for (size_t i = skip; i < k; i++) {
        const struct log_segment *s = log->segments[i];
        if (log->segments[i + 1]->base_offset <= first_dirty) {
            d->clean_bytes += s->size;
            continue;
        }
        if (d->first_dirty_segment == k)
            d->first_dirty_segment = i;
        d->dirty_bytes += s->size;
        int64_t ts = s->first_batch_timestamp >= 0 ? s->first_batch_timestamp : s->max_timestamp;
        if (ts >= 0 && cfg->max_compaction_lag_ms < INT64_MAX && now_ms - ts > cfg->max_compaction_lag_ms)
            d->overdue = true;
    }
    int64_t total = d->clean_bytes + d->dirty_bytes;
    d->dirty_ratio = total > 0 ? (double)d->dirty_bytes / (double)total : 0.0;
    d->due = d->dirty_bytes > 0 && (d->dirty_ratio >= cfg->min_cleanable_dirty_ratio || d->overdue);
}

void partition_log_dirtiness(struct partition_log *log, int64_t first_dirty, int64_t now_ms,
                             struct log_clean_dirtiness *out)
{
    /* A log not loaded with nothing past first_dirty has nothing to clean:
     * not a reason to open its files. */
    int64_t end = atomic_load(&log->log_end_offset);
    if ((!atomic_load(&log->loaded) && (first_dirty >= end || atomic_load(&log->log_start_offset) == end)) ||
        partition_log_ensure_loaded(log) != 0) {
        memset(out, 0, sizeof *out);
        return;
    }
    pthread_mutex_lock(&log->write_lock);
    dirtiness_locked(log, first_dirty, now_ms, out);
    pthread_mutex_unlock(&log->write_lock);
}

/* Decide under write_lock whether the log is due and capture what the pass
 * needs. Returns 0 (plan->count 0: nothing to do) or an errno value. */
static int make_plan(struct partition_log *log, int64_t first_dirty, int64_t now_ms,
                     const struct log_clean_options *opt, struct clean_plan *plan, struct log_clean_result *out)
{
    memset(plan, 0, sizeof *plan);
    plan->cfg = log->cfg;
    struct log_clean_dirtiness d;
    dirtiness_locked(log, first_dirty, now_ms, &d);
    out->first_dirty_offset = d.first_dirty_offset;
    out->dirty_ratio = d.dirty_ratio;
    plan->first_dirty = d.first_dirty_offset;
    size_t skip = d.first_cleanable_segment;
    if (d.cleanable_segments <= skip || (!d.due && !opt->force))
        return 0;
    size_t k = d.cleanable_segments - skip;

    plan->segs = calloc(k, sizeof *plan->segs);
    plan->groups = calloc(k, sizeof *plan->groups);
    plan->producer_cap = log->producers ? producer_state_count(log->producers) : 0;
    plan->producers = calloc(plan->producer_cap + 1, sizeof *plan->producers);
    if (!plan->segs || !plan->groups || !plan->producers)
        return ENOMEM;
    for (size_t i = 0; i < k; i++) {
        struct clean_segment *cs = &plan->segs[i];
        struct log_segment *s = log->segments[skip + i];
        struct stat st;
        cs->seg = s;
        cs->base = s->base_offset;
        cs->next_base = log->segments[skip + i + 1]->base_offset;
        cs->size = s->size;
        cs->index_bytes = (int64_t)(s->index_count * sizeof(struct log_offset_entry));
        cs->fd = dup(s->log_fd);
        plan->count = i + 1;
        if (cs->fd < 0 || fstat(cs->fd, &st) != 0)
            return errno;
        cs->mtime = st.st_mtim;
    }
    plan->first_dirty_index = d.first_dirty_segment - skip;
    plan->tiered = plan->cfg.remote_storage_enable || partition_log_tier_floor(log) >= 0;
    plan->truncations = log->truncations;
    if (log->producers)
        producer_state_foreach(log->producers, collect_producer, plan);
    qsort(plan->producers, plan->producer_count, sizeof *plan->producers, cmp_producer);
    int64_t range_end = plan->segs[k - 1].next_base;
    size_t na = 0;
    for (size_t i = 0; i < log->aborted.count; i++)
        if (log->aborted.entries[i].first_offset < range_end)
            na++;
    plan->aborted = calloc(na + 1, sizeof *plan->aborted);
    if (!plan->aborted)
        return ENOMEM;
    for (size_t i = 0; i < log->aborted.count; i++)
        if (log->aborted.entries[i].first_offset < range_end)
            plan->aborted[plan->aborted_count++] = log->aborted.entries[i];
    return 0;
}

/* ---- the dedupe map ---- */

/* Count bytes a pass read, reporting them to the throttler in chunks. */
static void count_read(struct clean_plan *plan, int64_t bytes, bool flush)
{
    if (!plan->throttler)
        return;
    plan->unthrottled_reads += bytes;
    if (flush || plan->unthrottled_reads >= CLEAN_THROTTLE_CHUNK) {
        log_throttler_observe(plan->throttler, plan->unthrottled_reads);
        plan->unthrottled_reads = 0;
    }
}

/* Batch at pos of a segment, bounds-checked; NULL at the end or when the
 * bytes do not hold a whole batch. */
static const uint8_t *next_batch(struct log_scanner *scan, int64_t pos, int64_t size, struct record_batch_header *h)
{
    if (pos >= size)
        return NULL;
    const uint8_t *p = log_scanner_get(scan, pos, RECORD_BATCH_HEADER_SIZE);
    if (!p)
        return NULL;
    record_batch_parse_header(p, RECORD_BATCH_HEADER_SIZE, h);
    if (h->magic != RECORD_BATCH_MAGIC || h->batch_length < RECORD_BATCH_HEADER_SIZE - RECORD_BATCH_LOG_OVERHEAD ||
        (int64_t)record_batch_total_size(h) > size - pos)
        return NULL;
    return log_scanner_get(scan, pos, record_batch_total_size(h));
}

/* Add the keys of segments [from, to) to map; *end is the first segment not
 * wholly added (the map filled up inside it). Returns 0 or an errno value. */
static int build_map(struct clean_plan *plan, size_t from, size_t to, struct log_offset_map *map, size_t *end)
{
    *end = to;
    for (size_t i = from; i < to; i++) {
        const struct clean_segment *cs = &plan->segs[i];
        struct log_scanner scan;
        struct record_batch_header h;
        const uint8_t *p;
        int64_t pos = 0;
        int rc = 0;
        log_scanner_init(&scan, cs->fd, cs->size, CLEAN_READ_BUF);
        while (rc == 0 && (p = next_batch(&scan, pos, cs->size, &h)) != NULL) {
            size_t total = record_batch_total_size(&h);
            pos += (int64_t)total;
            count_read(plan, (int64_t)total, false);
            if (record_batch_is_control(&h) ||
                (record_batch_is_transactional(&h) && is_aborted(plan, h.producer_id, h.base_offset)))
                continue;
            /* An unreadable compressed batch maps nothing: it is kept
             * whole by the rewrite too. */
            uint8_t *plain = NULL;
            size_t plain_len = total;
            char why[160];
            if (record_batch_compression(&h) != RECORD_BATCH_COMPRESSION_NONE &&
                record_codec_inflate_batch(p, total, log_decompressed_limit(&plan->cfg), &plain, &plain_len, why,
                                           sizeof why) != 0)
                continue;
            struct record_batch_record_iter it;
            struct record_batch_record rec;
            if (record_batch_records_begin(&it, plain ? plain : p, plain_len) == 0)
                while (rc == 0 && record_batch_records_next(&it, &rec) == 1)
                    if (rec.key_len >= 0)
                        rc = log_offset_map_put(map, rec.key, (size_t)rec.key_len, rec.offset);
            free(plain);
        }
        bool io_error = scan.io_error;
        log_scanner_free(&scan);
        if (io_error)
            return EIO;
        if (rc == 1) {
            *end = i;
            return 0;
        }
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* ---- rewriting one segment ---- */

struct keep_ctx {
    const struct log_offset_map *map;
    bool drop_tombstones;
    bool drop_all; /* a batch of an aborted transaction */
};

static bool keep_record(void *arg, const struct record_batch_record *rec)
{
    const struct keep_ctx *k = arg;
    if (k->drop_all)
        return false;
    if (rec->key_len < 0)
        return true;
    if (log_offset_map_get(k->map, rec->key, (size_t)rec->key_len) > rec->offset)
        return false; /* a later record of the key exists */
    return !(rec->value_len < 0 && k->drop_tombstones);
}

struct out_file {
    int fd;
    struct log_throttler *throttler; /* NULL: unthrottled */
    int64_t written;
    uint8_t *buf;
    size_t len;
};

static int out_flush(struct out_file *o)
{
    size_t done = 0;
    while (done < o->len) {
        ssize_t n = write(o->fd, o->buf + done, o->len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? errno : EIO;
        done += (size_t)n;
    }
    o->written += (int64_t)o->len;
    if (o->throttler)
        log_throttler_observe(o->throttler, (int64_t)o->len);
    o->len = 0;
    return 0;
}

static int out_append(struct out_file *o, const uint8_t *data, size_t len)
{
    if (o->len + len > CLEAN_WRITE_BUF) {
        int rc = out_flush(o);
        if (rc != 0)
            return rc;
    }
    if (len > CLEAN_WRITE_BUF) {
        const uint8_t *saved = o->buf;
        o->buf = (uint8_t *)data;
        o->len = len;
        int rc = out_flush(o);
        o->buf = (uint8_t *)saved;
        return rc;
    }
    memcpy(o->buf + o->len, data, len);
    o->len += len;
    return 0;
}

static int64_t timespec_ms(struct timespec t)
{
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Group consecutive segments as Kafka's groupSegmentsBySize does: a group
 * grows while its members' .log bytes stay within segment.bytes, their
 * offset indexes within segment.index.bytes, and its offsets relative to
 * its base fit the index's int32. A segment over a bound alone is a group. */
static void plan_groups(struct clean_plan *plan)
{
    const struct log_config *cfg = &plan->cfg;
    plan->group_count = 0;
    for (size_t i = 0; i < plan->count;) {
        size_t first = i;
        int64_t bytes = plan->segs[i].size, index_bytes = plan->segs[i].index_bytes;
        for (i++; i < plan->count; i++) {
            const struct clean_segment *cs = &plan->segs[i];
            if (bytes + cs->size > cfg->segment_bytes ||
                (cfg->segment_index_bytes > 0 && index_bytes + cs->index_bytes > cfg->segment_index_bytes) ||
                cs->next_base - 1 - plan->segs[first].base > INT32_MAX)
                break;
            bytes += cs->size;
            index_bytes += cs->index_bytes;
        }
        plan->groups[plan->group_count++] = (struct clean_group){.first = first, .count = i - first};
    }
}

/* Append what survives of segment i to o. *changed is set when a record or
 * batch went, *unwalked when bytes the walk could not read remain. Sets
 * cs->out_bytes. Returns 0 or an errno value. */
static int rewrite_member(struct partition_log *log, struct clean_plan *plan, size_t i,
                          const struct log_offset_map *map, struct clean_txn *txn, int64_t now_ms, struct out_file *o,
                          bool *changed, bool *unwalked)
{
    struct clean_segment *cs = &plan->segs[i];
    /* Tombstones go once delete.retention.ms has passed since their segment
     * was first cleaned: the file's mtime, set by that first rewrite. */
    bool was_clean = cs->next_base <= plan->first_dirty;
    struct keep_ctx keep = {
        .map = map,
        .drop_tombstones = was_clean && !plan->tiered && plan->cfg.delete_retention_ms < INT64_MAX &&
                           timespec_ms(cs->mtime) + plan->cfg.delete_retention_ms < now_ms,
    };
    int64_t out_start = o->written + (int64_t)o->len;
    uint8_t *scratch = NULL;
    size_t scratch_cap = 0;
    int rc = 0;
    struct log_scanner scan;
    log_scanner_init(&scan, cs->fd, cs->size, CLEAN_READ_BUF);
    int64_t pos = 0;
    struct record_batch_header h;
    const uint8_t *p;
    while (rc == 0 && (p = next_batch(&scan, pos, cs->size, &h)) != NULL) {
        size_t total = record_batch_total_size(&h);
        pos += (int64_t)total;
        count_read(plan, (int64_t)total, false);
        bool keeps_end = plan->tiered && pos == cs->size; /* the segment's last batch */
        if (record_batch_is_control(&h)) {
            bool drop = false;
            rc = clean_txn_control_batch(txn, &h, p, total, keep.drop_tombstones, &drop);
            if (rc == 0 && drop && !keeps_end)
                *changed = true;
            else if (rc == 0)
                rc = out_append(o, p, total);
            continue;
        }
        bool keep_empty = keeps_end || (h.producer_id >= 0 &&
                                        is_last_of_producer(plan, h.producer_id, record_batch_last_offset(&h)));
        rc = clean_txn_data_batch(txn, &h, &keep.drop_all);
        if (rc != 0)
            break;
        if (keep.drop_all && !keep_empty) {
            *changed = true; /* aborted: records and all */
            continue;
        }
        int codec = record_batch_compression(&h);
        uint8_t *plain = NULL, *packed = NULL;
        size_t plain_len = total;
        char why[160];
        if (codec != RECORD_BATCH_COMPRESSION_NONE &&
            record_codec_inflate_batch(p, total, log_decompressed_limit(&plan->cfg), &plain, &plain_len, why,
                                       sizeof why) != 0) {
            logger_warn("log", "%s: keeping an unreadable compressed batch at offset %" PRId64 ": %s", log->dir,
                        h.base_offset, why);
            rc = out_append(o, p, total);
            continue;
        }
        if (scratch_cap < plain_len) {
            uint8_t *grown = realloc(scratch, plain_len);
            if (!grown) {
                free(plain);
                rc = ENOMEM;
                break;
            }
            scratch = grown;
            scratch_cap = plain_len;
        }
        size_t new_len = 0;
        int outcome = log_clean_filter_batch(plain ? plain : p, plain_len, keep_record, &keep, keep_empty, scratch,
                                             &new_len);
        if (outcome == LOG_CLEAN_BATCH_SOME && plain && new_len > RECORD_BATCH_HEADER_SIZE &&
            record_codec_deflate_batch(scratch, new_len, codec, &packed, &new_len, why, sizeof why) != 0) {
            logger_warn("log", "%s: cannot recompress the batch at offset %" PRId64 ": %s", log->dir, h.base_offset,
                        why);
            outcome = LOG_CLEAN_BATCH_ALL;
        }
        /* An emptied batch kept for its producer is written uncompressed,
         * as Kafka writes it: there is nothing to compress. */
        if (outcome == LOG_CLEAN_BATCH_SOME) {
            *changed = true;
            rc = out_append(o, packed ? packed : scratch, new_len);
        } else if (outcome == LOG_CLEAN_BATCH_NONE) {
            *changed = true;
        } else {
            rc = out_append(o, p, total); /* all kept, or unreadable: keep it */
        }
        free(packed);
        free(plain);
    }
    if (rc == 0 && scan.io_error)
        rc = EIO;
    if (rc == 0 && pos != cs->size) {
        logger_warn("log", "%s: segment %" PRId64 " has unreadable data at position %" PRId64 "; not cleaning it",
                    log->dir, cs->base, pos);
        *unwalked = true;
    }
    log_scanner_free(&scan);
    free(scratch);
    cs->out_bytes = o->written + (int64_t)o->len - out_start;
    return rc;
}

/* An empty, synced <base>.log.cleaned: the segment was cleaned to nothing. */
static int write_empty_cleaned(const char *dir, int64_t base)
{
    char *path = log_segment_path(dir, base, ".log.cleaned");
    if (!path)
        return ENOMEM;
    int rc = 0, fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        rc = errno;
    else if (fsync(fd) != 0)
        rc = errno;
    if (fd >= 0)
        close(fd);
    if (rc != 0)
        unlink(path);
    free(path);
    return rc;
}

/* Members at the end of group gi that kept nothing leave it, each as its
 * own empty group: a .swap then always covers its members with its own
 * offsets, which is how start-up finds them (see the swap code). */
static int split_empty_tail(struct partition_log *log, struct clean_plan *plan, size_t gi)
{
    struct clean_group *g = &plan->groups[gi];
    size_t keep = g->count;
    while (keep > 1 && plan->segs[g->first + keep - 1].out_bytes == 0)
        keep--;
    size_t tail = g->count - keep;
    if (tail == 0)
        return 0;
    size_t first = g->first;
    memmove(&plan->groups[gi + 1 + tail], &plan->groups[gi + 1], (plan->group_count - gi - 1) * sizeof *plan->groups);
    plan->group_count += tail;
    g->count = keep;
    int rc = 0;
    for (size_t t = 0; t < tail; t++) {
        size_t s = first + keep + t;
        plan->groups[gi + 1 + t] = (struct clean_group){.first = s, .count = 1};
        if (rc == 0 && (rc = write_empty_cleaned(log->dir, plan->segs[s].base)) == 0)
            plan->groups[gi + 1 + t].rewritten = true;
    }
    return rc;
}

/* Write <group base>.log.cleaned with what survives of the members of
 * group gi; it is kept (group->rewritten) when anything changed or members
 * merge, removed otherwise. *next: the group after it (split_empty_tail
 * may add some). Returns 0 or an errno value. */
static int rewrite_group(struct partition_log *log, struct clean_plan *plan, size_t gi,
                         const struct log_offset_map *map, struct clean_txn *txn, int64_t now_ms, size_t *next)
{
    struct clean_group *g = &plan->groups[gi];
    *next = gi + 1;
    char *path = log_segment_path(log->dir, plan->segs[g->first].base, ".log.cleaned");
    struct out_file o = {.fd = -1, .throttler = plan->throttler, .buf = malloc(CLEAN_WRITE_BUF)};
    int rc = (path && o.buf) ? 0 : ENOMEM;
    if (rc == 0 && (o.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
        rc = errno;
    bool changed = false, unwalked = false, all_clean = true;
    struct timespec newest = {0};
    size_t gone_mark = txn->gone.count;
    int64_t size = 0;
    for (size_t k = 0; k < g->count; k++) {
        const struct clean_segment *cs = &plan->segs[g->first + k];
        size += cs->size;
        all_clean = all_clean && cs->next_base <= plan->first_dirty;
        if (cs->mtime.tv_sec > newest.tv_sec ||
            (cs->mtime.tv_sec == newest.tv_sec && cs->mtime.tv_nsec > newest.tv_nsec))
            newest = cs->mtime;
        if (rc == 0)
            rc = rewrite_member(log, plan, g->first + k, map, txn, now_ms, &o, &changed, &unwalked);
    }
    /* Unreadable bytes: leave the members as they are rather than lose
     * whatever follows them. */
    bool write = rc == 0 && !unwalked && (changed || g->count > 1);
    if (!write)
        clean_txn_segment_kept(txn, gone_mark, rc == 0 && unwalked);
    if (rc == 0)
        rc = out_flush(&o);
    if (rc == 0 && write && all_clean) {
        /* Keep the first-clean time as the tombstone clock; of several
         * members the newest, so no tombstone goes early. */
        struct timespec times[2] = {{.tv_sec = 0, .tv_nsec = UTIME_OMIT}, newest};
        if (futimens(o.fd, times) != 0)
            rc = errno;
    }
    if (rc == 0 && write && fsync(o.fd) != 0)
        rc = errno;
    if (o.fd >= 0)
        close(o.fd);
    if (path && (rc != 0 || !write))
        unlink(path);
    g->rewritten = rc == 0 && write;
    g->new_size = g->rewritten ? o.written : size;
    free(o.buf);
    free(path);
    if (rc == 0 && g->rewritten && g->count > 1) {
        size_t before = plan->group_count;
        rc = split_empty_tail(log, plan, gi);
        *next = gi + 1 + (plan->group_count - before);
    }
    return rc;
}

int partition_log_clean(struct partition_log *log, int64_t first_dirty, int64_t now_ms,
                        const struct log_clean_options *opt, struct log_clean_result *out)
{
    if (partition_log_ensure_loaded(log) != 0)
        return EIO;
    memset(out, 0, sizeof *out);
    struct clean_plan plan;
    pthread_mutex_lock(&log->write_lock);
    int rc = make_plan(log, first_dirty, now_ms, opt, &plan, out);
    pthread_mutex_unlock(&log->write_lock);
    if (rc != 0 || plan.count == 0) {
        plan_free(&plan);
        return rc;
    }
    plan.throttler = opt->throttler;

    struct log_offset_map map;
    size_t end = plan.count;
    rc = log_offset_map_init(&map, opt->dedupe_buffer_bytes, opt->load_factor);
    if (rc == 0)
        rc = build_map(&plan, plan.first_dirty_index, plan.count, &map, &end);
    if (rc == 0 && end <= plan.first_dirty_index && plan.first_dirty_index < plan.count) {
        logger_warn("log",
                    "%s: the dedupe buffer cannot hold the keys of segment %" PRId64
                    "; raise log.cleaner.dedupe.buffer.size",
                    log->dir, plan.segs[plan.first_dirty_index].base);
        log_offset_map_free(&map);
        plan_free(&plan);
        return 0;
    }
    /* Segments past where the map filled stay dirty for the next pass. */
    for (size_t i = end; i < plan.count; i++) {
        close(plan.segs[i].fd);
        plan.segs[i].fd = -1;
    }
    plan.count = end;
    plan_groups(&plan);
    struct clean_txn txn;
    if (rc == 0)
        rc = clean_txn_init(&txn, plan.aborted, plan.aborted_count);
    else
        memset(&txn, 0, sizeof txn);
    for (size_t g = 0, next; rc == 0 && g < plan.group_count; g = next)
        rc = rewrite_group(log, &plan, g, &map, &txn, now_ms, &next);
    count_read(&plan, 0, true);
    for (size_t g = 0; rc == 0 && g < plan.group_count; g++) {
        const struct clean_group *grp = &plan.groups[g];
        int64_t size = 0;
        for (size_t k = 0; k < grp->count; k++)
            size += plan.segs[grp->first + k].size;
        out->bytes_before += size;
        out->bytes_after += grp->new_size;
        out->segments_rewritten += grp->rewritten ? (int)grp->count : 0;
    }
    log_offset_map_free(&map);
    if (rc != 0) {
        clean_remove_output(log->dir, &plan, ".log.cleaned");
        clean_txn_free(&txn);
        plan_free(&plan);
        return rc;
    }

    pthread_mutex_lock(&log->write_lock);
    rc = clean_swap_in(log, &plan, &txn, now_ms, opt->stop_after);
    if (rc == 0 && opt->stop_after == LOG_CLEAN_STOP_NONE)
        atomic_store(&log->clean_checkpoint, plan.segs[plan.count - 1].next_base);
    pthread_mutex_unlock(&log->write_lock);
    clean_txn_free(&txn);
    if (rc != 0)
        clean_remove_output(log->dir, &plan, ".log.cleaned");
    if (rc == ESTALE) {
        /* Retention, truncation or deletion got there first: try again later. */
        out->segments_rewritten = 0;
        out->bytes_after = out->bytes_before;
        rc = 0;
    } else if (rc == 0) {
        out->cleaned = true;
        if (opt->stop_after == LOG_CLEAN_STOP_NONE)
            out->first_dirty_offset = plan.segs[plan.count - 1].next_base;
    }
    plan_free(&plan);
    return rc;
}
