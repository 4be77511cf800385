/* Reads below the local log start, served in chunks of remote segments.
 *
 * A remote segment is read in chunks of about remote.log.chunk.size.bytes:
 * chunk k starts at the first batch the segment's offset index lists at or
 * after position k * chunk size (chunk 0 at 0), and ends where the next one
 * starts, so a chunk always holds whole batches and no batch is split
 * between two. A segment without an offset index is one chunk. A fetch at
 * offset O downloads the segment's offset index (kept in memory), then only
 * the chunk holding O (fetch_segment with that byte range), and answers the
 * batches from O on up to max_bytes that lie in that chunk: whole batches
 * exactly as a local read of the segment gives them, stopping at the
 * chunk's end as a local read stops at its segment's end (the consumer
 * asks again from the next offset).
 *
 * Chunks are files in an on-disk cache (<state_dir>/remote-log-cache,
 * emptied at start), checked batch by batch (framing, offsets within the
 * segment, CRC) before anything is served. Chunk files and indexes together
 * are bounded by remote.log.index.file.cache.total.size.bytes, least
 * recently used first out.
 *
 * The request thread never waits: a read that misses the cache queues a
 * download and answers PENDING; the download's end calls read_ready with
 * the keys of every read that waited. Timestamp lookups (ListOffsets, on
 * a blocking-work thread, tiered_timestamp.c) use the same entries, plus
 * the time index, and wait on `landed` for the reader threads' downloads,
 * up to their deadline.
 *
 * Read-ahead: a fetch served from (or waiting for) a chunk queues the
 * downloads of the chunks after it, in the same segment and then the
 * following ones, remote.log.read.ahead.segments segments' worth (that many
 * times the chunk count of the segment being read; with segments no larger
 * than a chunk, that many segments as before), so a reader going forward
 * finds them ready. At most READ_AHEAD_IN_FLIGHT are in flight per
 * partition, and only while the chunk being read and the unread read-ahead
 * chunks fit in the cache together; eviction spares the chunk a partition
 * is reading, then unread read-ahead chunks. */
#include "tiered/tiered_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "protocol/generated/errors.h"
#include "tiered/tiered_cache.h"
#include "tiered/tiered_chunk.h"
#include "util/clock.h"
#include "util/fs_util.h"
#include "util/logger.h"

static void entry_free(struct cache_entry *e)
{
    if (e->fd >= 0)
        close(e->fd);
    free(e->index);
    free(e->times);
    free(e->chunk_starts);
    free(e);
}

static char *chunk_path(const struct tiered_cache *c, const uint8_t id[16], int64_t chunk)
{
    char hex[33];
    tiered_hex(id, 16, hex);
    char *path = NULL;
    return asprintf(&path, "%s/%s.%" PRId64 ".chunk", c->dir, hex, chunk) < 0 ? NULL : path;
}

int64_t tiered_cache_chunk_end(const struct cache_entry *ie, size_t k)
{
    return k + 1 < ie->chunk_count ? ie->chunk_starts[k + 1] : ie->seg_size;
}

/* Chunk starts from the index: 0, then the first indexed batch at or after
 * each multiple of chunk_bytes (entries out of order or past the end are
 * ignored: a bad index then fails the chunk check, never serves). On
 * failure (out of memory) the index is dropped too. */
static int split_chunks(struct cache_entry *ie, int64_t chunk_bytes)
{
    ie->chunk_starts = calloc(ie->index_count + 1, sizeof *ie->chunk_starts);
    if (!ie->chunk_starts) {
        free(ie->index);
        ie->index = NULL;
        ie->index_count = 0;
        return -1;
    }
    ie->chunk_starts[0] = 0;
    ie->chunk_count = 1;
    int64_t mark = chunk_bytes;
    for (size_t i = 0; i < ie->index_count; i++) {
        int64_t pos = ie->index[i].position;
        if (pos <= ie->chunk_starts[ie->chunk_count - 1] || pos >= ie->seg_size || pos < mark)
            continue;
        ie->chunk_starts[ie->chunk_count++] = pos;
        mark = (pos / chunk_bytes + 1) * chunk_bytes;
    }
    return 0;
}

/* The position of the last indexed batch below offset (0 when none). */
int64_t tiered_cache_floor_position(const struct cache_entry *ie, int64_t offset)
{
    int64_t pos = 0;
    for (size_t i = 0; i < ie->index_count; i++) {
        if (ie->base_offset + ie->index[i].rel_offset >= offset)
            break;
        if (ie->index[i].position < ie->seg_size)
            pos = ie->index[i].position;
    }
    return pos;
}

size_t tiered_cache_chunk_of(const struct cache_entry *ie, int64_t pos)
{
    size_t k = 0;
    while (k + 1 < ie->chunk_count && ie->chunk_starts[k + 1] <= pos)
        k++;
    return k;
}

/* A read-ahead chunk leaves the unread window of its partition. */
static void ahead_clear_locked(struct cache_entry *e)
{
    if (e->ahead) {
        e->ahead = false;
        e->p->ahead_bytes -= e->size;
    }
}

static void ahead_loading_clear_locked(struct cache_entry *e)
{
    if (e->ahead_loading) {
        e->ahead_loading = false;
        e->p->ahead_loading--;
    }
}

/* The index and the chunk a partition reads now are never evicted. */
static bool being_read(const struct cache_entry *e)
{
    return e->p && e->p->reading_known && memcmp(e->p->reading_id, e->id, 16) == 0 &&
           (e->chunk == INDEX_CHUNK || e->chunk == e->p->reading_chunk);
}

/* The least recently used ready entry that may go (never keep nor one a
 * partition is reading; unread read-ahead chunks only when with_ahead). */
static struct cache_entry **pick_victim(struct tiered_cache *c, const struct cache_entry *keep, bool with_ahead)
{
    struct cache_entry **victim = NULL;
    for (struct cache_entry **e = &c->entries; *e; e = &(*e)->next) {
        const struct cache_entry *x = *e;
        if (x->state != CACHE_READY || x == keep || being_read(x) || (x->ahead && !with_ahead))
            continue;
        if (!victim || x->last_used < (*victim)->last_used)
            victim = e;
    }
    return victim;
}

/* Drops least recently used ready entries until the cache fits, keeping
 * keep and what partitions are reading, and unread read-ahead if it can. */
static void evict_locked(struct tiered *t, const struct cache_entry *keep)
{
    struct tiered_cache *c = t->cache;
    while (c->bytes > t->opts.cache_bytes) {
        struct cache_entry **victim = pick_victim(c, keep, false);
        if (!victim)
            victim = pick_victim(c, keep, true);
        if (!victim)
            return;
        struct cache_entry *gone = *victim;
        *victim = gone->next;
        ahead_clear_locked(gone);
        c->bytes -= gone->size;
        if (gone->chunk >= 0) {
            char *path = chunk_path(c, gone->id, gone->chunk);
            if (path)
                unlink(path); /* readers holding a dup()ed fd keep the data */
            free(path);
        }
        entry_free(gone);
    }
}

struct cache_entry *tiered_cache_find_locked(struct tiered_cache *c, const uint8_t id[16], int64_t chunk)
{
    struct cache_entry *e = c->entries;
    while (e && (e->chunk != chunk || memcmp(e->id, id, 16) != 0))
        e = e->next;
    return e;
}

/* Queues a download of chunk [start, end) of seg (or of its index: chunk
 * INDEX_CHUNK) into e (a FAILED entry retried) or a new entry; returns the
 * entry, NULL when out of memory. Caller holds the cache lock. */
struct cache_entry *tiered_cache_queue_locked(struct tiered *t, struct tiered_partition *p,
                                              const struct tiered_segment *seg, int64_t chunk, int64_t start,
                                              int64_t end, struct cache_entry *e)
{
    struct tiered_cache *c = t->cache;
    struct cache_job *job = calloc(1, sizeof *job);
    if (!job)
        return NULL;
    if (!e) {
        e = calloc(1, sizeof *e);
        if (!e) {
            free(job);
            return NULL;
        }
        memcpy(e->id, seg->id, 16);
        e->chunk = chunk;
        e->base_offset = seg->start_offset;
        e->p = p;
        e->seg_size = seg->size_bytes;
        e->start = start;
        e->size = chunk < 0 ? 0 : end - start;
        e->fd = -1;
        e->next = c->entries;
        c->entries = e;
    }
    e->state = CACHE_LOADING;
    *job = (struct cache_job){.entry = e, .p = p, .seg = *seg, .chunk = chunk, .start = start, .end = end};
    if (c->jobs_tail)
        c->jobs_tail->next = job;
    else
        c->jobs = job;
    c->jobs_tail = job;
    pthread_cond_signal(&c->cond);
    /* Counted when queued, so the next read sees it (KIP-956's fetch quota). */
    if (chunk >= 0)
        tiered_quota_record(&t->fetch_quota, end - start);
    return e;
}

/* Read-ahead downloads in flight per partition: as many as the window
 * holds, at most READ_AHEAD_IN_FLIGHT (reader threads serve every
 * partition). */
static int32_t ahead_in_flight_cap(size_t window)
{
    return window < READ_AHEAD_IN_FLIGHT ? (int32_t)window : READ_AHEAD_IN_FLIGHT;
}

/* Queues chunk k of the segment indexed by ie as read-ahead unless it is
 * known already. Returns false when the partition's read-ahead budget (in
 * flight below in_flight_cap, cache room beside the current_bytes being
 * read, fetch quota) is spent. */
static bool ahead_chunk_locked(struct tiered *t, struct tiered_partition *p, const struct tiered_segment *seg,
                               const struct cache_entry *ie, size_t k, int64_t current_bytes, int32_t in_flight_cap)
{
    struct tiered_cache *c = t->cache;
    if (c->stopping)
        return false;
    if (tiered_cache_find_locked(c, seg->id, (int64_t)k))
        return true; /* cached, downloading, or failed (a fetch retries that) */
    int64_t start = ie->chunk_starts[k], end = tiered_cache_chunk_end(ie, k);
    if (p->ahead_loading >= in_flight_cap || current_bytes + p->ahead_bytes + (end - start) > t->opts.cache_bytes ||
        tiered_quota_exceeded(&t->fetch_quota))
        return false;
    struct cache_entry *e = tiered_cache_queue_locked(t, p, seg, (int64_t)k, start, end, NULL);
    if (!e)
        return false;
    e->ahead = true;
    e->ahead_loading = true;
    p->ahead_loading++;
    p->ahead_bytes += e->size;
    metrics_add(t->metrics.read_ahead_started, 1);
    return true;
}

static void finish_job(struct tiered *t, struct cache_job *job)
{
    struct tiered_cache *c = t->cache;
    int fd = -1;
    struct tiered_index_entry *index = NULL;
    size_t index_count = 0;
    struct tiered_time_entry *times = NULL;
    size_t time_count = 0;
    char err[512] = "";
    enum tiered_error_kind kind = TIERED_ERROR_OTHER;
    int rc;
    if (job->chunk == INDEX_CHUNK) {
        rc = tiered_index_download(t, job->p, &job->seg, &index, &index_count, &kind, err, sizeof err);
    } else if (job->chunk == TIME_INDEX_CHUNK) {
        rc = tiered_time_index_download(t, job->p, &job->seg, &times, &time_count, &kind, err, sizeof err);
    } else {
        char *path = chunk_path(c, job->seg.id, job->chunk);
        rc = path ? tiered_chunk_download(t, job->p, &job->seg, job->start, job->end, path, &fd, &kind, err, sizeof err)
                  : -1;
        if (!path)
            snprintf(err, sizeof err, "out of memory");
        free(path);
    }
    if (rc != 0) {
        tiered_count_error(t, TIERED_OP_FETCH, kind);
        logger_warn("tiered", "%s-%" PRId32 ": reading remote segment %" PRId64 " failed: %s", job->p->topic,
                    job->p->partition, job->seg.start_offset, err);
    }
    pthread_mutex_lock(&c->lock);
    struct cache_entry *e = job->entry;
    uintptr_t keys[CACHE_MAX_KEYS];
    size_t key_count = e->key_count;
    memcpy(keys, e->keys, key_count * sizeof keys[0]);
    e->key_count = 0;
    ahead_loading_clear_locked(e);
    if (rc == 0 && e->chunk == INDEX_CHUNK) {
        e->index = index;
        e->index_count = index_count;
        index = NULL;
        if (split_chunks(e, t->opts.chunk_bytes) != 0)
            rc = -1; /* out of memory: a retry downloads it again */
    }
    if (rc == 0 && e->chunk == TIME_INDEX_CHUNK) {
        e->times = times;
        e->time_count = time_count;
        times = NULL;
    }
    if (rc == 0) {
        e->state = CACHE_READY;
        e->fd = fd;
        if (e->chunk < 0) { /* a page at least, so the bound also bounds the entry count */
            e->size = (int64_t)(e->index_count * sizeof *e->index + e->chunk_count * sizeof *e->chunk_starts +
                                e->time_count * sizeof *e->times);
            if (e->size < INDEX_MIN_CHARGE)
                e->size = INDEX_MIN_CHARGE;
        }
        c->bytes += e->size;
        e->last_used = clock_mono_ms();
        if (e->ahead_first_chunk)
            ahead_chunk_locked(t, job->p, &job->seg, e, 0, 0, ahead_in_flight_cap((size_t)t->opts.read_ahead_segments));
        evict_locked(t, e);
    } else {
        if (fd >= 0)
            close(fd);
        e->state = CACHE_FAILED;
        e->failed_at_ms = clock_mono_ms();
        ahead_clear_locked(e);
    }
    e->ahead_first_chunk = false;
    pthread_cond_broadcast(&c->landed);
    pthread_mutex_unlock(&c->lock);
    free(index);
    free(times);
    for (size_t i = 0; i < key_count; i++)
        if (t->opts.read_ready)
            t->opts.read_ready(t->opts.ctx, keys[i]);
}

static void *reader_main(void *arg)
{
    struct tiered *t = arg;
    struct tiered_cache *c = t->cache;
    pthread_mutex_lock(&c->lock);
    for (;;) {
        while (!c->stopping && !c->jobs)
            pthread_cond_wait(&c->cond, &c->lock);
        if (c->stopping)
            break;
        struct cache_job *job = c->jobs;
        c->jobs = job->next;
        if (!c->jobs)
            c->jobs_tail = NULL;
        pthread_mutex_unlock(&c->lock);
        finish_job(t, job);
        free(job);
        pthread_mutex_lock(&c->lock);
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

static void remove_files(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d)
        closedir(d);
}

int tiered_cache_create(struct tiered *t, char *err, size_t errlen)
{
    struct tiered_cache *c = calloc(1, sizeof *c);
    if (!c || asprintf(&c->dir, "%s/remote-log-cache", t->opts.state_dir) < 0) {
        free(c);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (t->opts.chunk_bytes <= 0)
        t->opts.chunk_bytes = 4 << 20;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cond, NULL);
    pthread_cond_init(&c->landed, NULL);
    t->cache = c;
    if (fs_mkdir_p(c->dir, err, errlen) != 0)
        return -1;
    remove_files(c->dir); /* a previous run's cache: cheaper to refetch than to trust */
    size_t n = t->opts.reader_threads > 0 ? (size_t)t->opts.reader_threads : 1;
    c->readers = calloc(n, sizeof *c->readers);
    if (!c->readers) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (; c->reader_count < n; c->reader_count++) {
        if (pthread_create(&c->readers[c->reader_count], NULL, reader_main, t) != 0) {
            snprintf(err, errlen, "cannot start a remote log reader thread");
            return -1;
        }
    }
    return 0;
}

void tiered_stop_reads(struct tiered *t)
{
    struct tiered_cache *c = t ? t->cache : NULL;
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    c->stopping = true;
    pthread_cond_broadcast(&c->cond);
    pthread_cond_broadcast(&c->landed);
    pthread_mutex_unlock(&c->lock);
    for (size_t i = 0; i < c->reader_count; i++)
        pthread_join(c->readers[i], NULL);
    c->reader_count = 0;
}

void tiered_cache_destroy(struct tiered *t)
{
    struct tiered_cache *c = t->cache;
    if (!c)
        return;
    tiered_stop_reads(t);
    while (c->jobs) {
        struct cache_job *job = c->jobs;
        c->jobs = job->next;
        free(job);
    }
    while (c->entries) {
        struct cache_entry *e = c->entries;
        c->entries = e->next;
        entry_free(e);
    }
    remove_files(c->dir);
    free(c->readers);
    free(c->dir);
    pthread_cond_destroy(&c->cond);
    pthread_cond_destroy(&c->landed);
    pthread_mutex_destroy(&c->lock);
    free(c);
    t->cache = NULL;
}

static void copy_plain(struct tiered_segment *out, const struct tiered_segment *s)
{
    *out = *s;
    out->epochs = NULL;
    out->epoch_starts = NULL;
    out->epoch_count = 0;
    out->aborted = NULL;
    out->aborted_count = 0;
}

#define READ_AHEAD_MAX 16 /* remote.log.read.ahead.segments' upper bound */

/* The finished remote segment holding offset, and up to next_max finished
 * ones right after it (for read-ahead; *next_count of them), copied out of p. */
static bool find_segment(struct tiered *t, const char *topic, int32_t partition, int64_t offset,
                         struct tiered_partition **pp, struct tiered_segment *out, struct tiered_segment *next,
                         size_t next_max, size_t *next_count)
{
    *next_count = 0;
    pthread_mutex_lock(&t->lock);
    struct tiered_partition *p = tiered_partition_find_locked(t, topic, partition);
    pthread_mutex_unlock(&t->lock);
    if (!p)
        return false;
    bool found = false;
    pthread_mutex_lock(&p->lock);
    for (size_t i = 0; i < p->count && !found; i++) {
        const struct tiered_segment *s = &p->segs[i];
        if (s->state == TIERED_COPY_FINISHED && s->start_offset <= offset && offset <= s->end_offset) {
            copy_plain(out, s);
            found = true;
            for (size_t k = i + 1; k < p->count && *next_count < next_max; k++) {
                if (p->segs[k].state != TIERED_COPY_FINISHED)
                    break; /* a gap: what follows is not where this reader goes next */
                copy_plain(&next[(*next_count)++], &p->segs[k]);
            }
        }
    }
    pthread_mutex_unlock(&p->lock);
    *pp = p;
    return found;
}

/* Queues the downloads of the chunks after chunk k of seg that a
 * sequential reader reaches next: the rest of seg, then the following
 * segments (whose index comes first, then their chunk 0), within the
 * partition's in-flight and cache budgets. */
static void read_ahead_locked(struct tiered *t, struct tiered_partition *p, const struct tiered_segment *seg,
                              const struct cache_entry *ie, size_t k, const struct tiered_segment *next,
                              size_t next_count)
{
    struct tiered_cache *c = t->cache;
    /* The window: remote.log.read.ahead.segments segments' worth of chunks,
     * counted in chunks of the segment being read. */
    size_t want = t->opts.read_ahead_segments > 0 ? (size_t)t->opts.read_ahead_segments * ie->chunk_count : 0;
    int32_t cap = ahead_in_flight_cap(want);
    int64_t current = tiered_cache_chunk_end(ie, k) - ie->chunk_starts[k];
    size_t counted = 0;
    for (size_t j = k + 1; j < ie->chunk_count && counted < want; j++, counted++)
        if (!ahead_chunk_locked(t, p, seg, ie, j, current, cap))
            return;
    for (size_t i = 0; i < next_count && counted < want && !c->stopping; i++) {
        struct cache_entry *nie = tiered_cache_find_locked(c, next[i].id, INDEX_CHUNK);
        if (!nie) {
            if (p->ahead_loading >= cap || tiered_quota_exceeded(&t->fetch_quota))
                return;
            nie = tiered_cache_queue_locked(t, p, &next[i], INDEX_CHUNK, 0, 0, NULL);
            if (nie) {
                nie->ahead_loading = true;
                nie->ahead_first_chunk = true;
                p->ahead_loading++;
            }
            return; /* its chunks are known once it lands */
        }
        if (nie->state != CACHE_READY)
            return;
        for (size_t j = 0; j < nie->chunk_count && counted < want; j++, counted++)
            if (!ahead_chunk_locked(t, p, &next[i], nie, j, current, cap))
                return;
    }
}

/* A fetch touches entry e (maybe NULL): it is no longer read-ahead, so the
 * next read-ahead may start; counts a read-ahead hit. */
void tiered_cache_touch_locked(struct tiered *t, struct cache_entry *e)
{
    if (!e)
        return;
    if (e->ahead && e->state == CACHE_READY)
        metrics_add(t->metrics.read_ahead_hits, 1);
    ahead_clear_locked(e);
    ahead_loading_clear_locked(e);
    e->ahead_first_chunk = false;
}

/* A fetch needs entry e (NULL: not known; else LOADING or FAILED) of seg:
 * the retriable error after a recent failure, an empty answer over the
 * fetch quota, or a download queued (unless one runs) that wakes key. */
static enum tiered_read_status want_locked(struct tiered *t, struct tiered_partition *p,
                                           const struct tiered_segment *seg, struct cache_entry *e, int64_t chunk,
                                           int64_t start, int64_t end, uintptr_t key, int16_t *kafka_error)
{
    struct tiered_cache *c = t->cache;
    int64_t now = clock_mono_ms();
    int64_t throttle_ms = 0;
    if (c->stopping || (e && e->state == CACHE_FAILED && now - e->failed_at_ms < CACHE_RETRY_MS)) {
        *kafka_error = KAFKA_ERR_KAFKA_STORAGE_ERROR; /* retriable: the client tries again */
        return TIERED_READ_ERROR;
    }
    if ((!e || e->state == CACHE_FAILED) && (throttle_ms = tiered_quota_throttle_ms(&t->fetch_quota)) > 0) {
        /* KIP-956: over the remote fetch quota, no new download; this
         * partition answers empty this round and the consumer asks again. */
        metrics_add(t->metrics.fetch_throttled, 1);
        metrics_add(t->metrics.fetch_throttle_ms, throttle_ms);
        return TIERED_READ_DONE;
    }
    if (!e || e->state == CACHE_FAILED) {
        metrics_add(t->metrics.cache_misses, 1);
        e = tiered_cache_queue_locked(t, p, seg, chunk, start, end, e);
    }
    if (!e) {
        *kafka_error = KAFKA_ERR_KAFKA_STORAGE_ERROR;
        return TIERED_READ_ERROR;
    }
    bool known = false;
    for (size_t i = 0; i < e->key_count; i++)
        known |= e->keys[i] == key;
    if (!known && e->key_count < CACHE_MAX_KEYS)
        e->keys[e->key_count++] = key;
    return TIERED_READ_PENDING;
}

enum tiered_read_status tiered_read(struct tiered *t, struct partition_log *log, const char *topic, int32_t partition,
                                    int64_t offset, int32_t max_bytes, int64_t max_offset, uintptr_t key,
                                    struct log_read_result *out, int16_t *kafka_error)
{
    *kafka_error = KAFKA_ERR_NONE;
    if (!t || offset >= partition_log_local_start_offset(log) || offset < partition_log_start_offset(log))
        return TIERED_READ_LOCAL; /* local data, or below the start: the local read says out of range */
    struct tiered_partition *p = NULL;
    struct tiered_segment seg, next[READ_AHEAD_MAX];
    size_t ahead_max = t->opts.read_ahead_segments > 0 ? (size_t)t->opts.read_ahead_segments : 0;
    if (ahead_max > READ_AHEAD_MAX)
        ahead_max = READ_AHEAD_MAX;
    size_t next_count = 0;
    if (!find_segment(t, topic, partition, offset, &p, &seg, next, ahead_max, &next_count))
        return TIERED_READ_LOCAL; /* below every remote segment: out of range locally too */
    memset(out, 0, sizeof *out);
    out->fd = -1;
    out->log_start_offset = partition_log_start_offset(log);
    out->log_end_offset = partition_log_end_offset(log);
    out->next_offset = offset;
    if (offset >= max_offset)
        return TIERED_READ_DONE;
    struct tiered_cache *c = t->cache;
    pthread_mutex_lock(&c->lock);
    int64_t now = clock_mono_ms();
    enum tiered_read_status status;
    struct cache_entry *ie = tiered_cache_find_locked(c, seg.id, INDEX_CHUNK);
    tiered_cache_touch_locked(t, ie);
    size_t k = 0;
    if (!ie || ie->state != CACHE_READY) {
        status = want_locked(t, p, &seg, ie, INDEX_CHUNK, 0, 0, key, kafka_error);
        ie = NULL;
    } else {
        ie->last_used = now;
        int64_t pos = tiered_cache_floor_position(ie, offset);
        k = tiered_cache_chunk_of(ie, pos);
        for (;;) {
            struct cache_entry *e = tiered_cache_find_locked(c, seg.id, (int64_t)k);
            tiered_cache_touch_locked(t, e);
            if (!e || e->state != CACHE_READY) {
                status = want_locked(t, p, &seg, e, (int64_t)k, ie->chunk_starts[k], tiered_cache_chunk_end(ie, k), key,
                                     kafka_error);
                break;
            }
            e->last_used = now;
            metrics_add(t->metrics.cache_hits, 1);
            bool passed = false;
            *kafka_error = tiered_chunk_read(e->fd, e->start, e->size, pos > e->start ? pos : e->start, offset,
                                             max_bytes, max_offset, out, &passed);
            status = *kafka_error == KAFKA_ERR_NONE ? TIERED_READ_DONE : TIERED_READ_ERROR;
            if (status != TIERED_READ_DONE || !passed || k + 1 >= ie->chunk_count)
                break;
            k++; /* offset lies further on */
        }
    }
    if (status != TIERED_READ_ERROR) {
        memcpy(p->reading_id, seg.id, 16);
        p->reading_chunk = (int64_t)k;
        p->reading_known = true;
        if (ie)
            read_ahead_locked(t, p, &seg, ie, k, next, next_count);
    }
    pthread_mutex_unlock(&c->lock);
    return status;
}

size_t tiered_aborted_txns(struct tiered *t, const char *topic, int32_t partition, int64_t fetch_offset,
                           int64_t upper_bound, int64_t before_offset,
                           void (*fn)(void *arg, int64_t producer_id, int64_t first_offset), void *arg)
{
    if (!t)
        return 0;
    pthread_mutex_lock(&t->lock);
    struct tiered_partition *p = tiered_partition_find_locked(t, topic, partition);
    pthread_mutex_unlock(&t->lock);
    if (!p)
        return 0;
    size_t n = 0;
    pthread_mutex_lock(&p->lock);
    for (size_t i = 0; i < p->count; i++) {
        const struct tiered_segment *s = &p->segs[i];
        if (s->state != TIERED_COPY_FINISHED || s->end_offset < fetch_offset)
            continue;
        for (size_t k = 0; k < s->aborted_count; k++) {
            const struct txn_index_entry *e = &s->aborted[k];
            if (e->last_offset >= fetch_offset && e->last_offset < before_offset && e->first_offset < upper_bound) {
                if (fn)
                    fn(arg, e->producer_id, e->first_offset);
                n++;
            }
        }
    }
    pthread_mutex_unlock(&p->lock);
    return n;
}
