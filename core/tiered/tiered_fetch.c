/* Reads below the local log start: remote segments are fetched whole by
 * the reader threads into an on-disk cache (<state_dir>/remote-log-cache,
 * emptied at start, bounded by remote.log.index.file.cache.total.size.bytes,
 * least recently used first out), checked batch by batch (framing, offsets
 * within the segment, CRC) before anything is served, then read exactly
 * as a local segment is: the same batches, the same bytes.
 *
 * The request thread never waits: a read that misses the cache queues a
 * download and answers PENDING; the download's end calls read_ready with
 * the keys of every read that waited.
 *
 * Read-ahead: a fetch served from (or waiting for) remote segment N queues
 * the downloads of the next remote.log.read.ahead.segments segments, so a
 * reader going forward finds them ready. At most that many are in flight
 * per partition, and only while the segment being read and the unread
 * read-ahead segments fit in the cache together; eviction spares the
 * segment a partition is reading, then unread read-ahead segments. */
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
#include "protocol/record_batch.h"
#include "util/clock.h"
#include "util/fs_util.h"
#include "util/logger.h"

#define CACHE_RETRY_MS 1000 /* a failed download is retried by the next read after this */
#define CACHE_MAX_KEYS 64   /* waiters remembered per download; more are woken by their deadline */

enum cache_state { CACHE_LOADING, CACHE_READY, CACHE_FAILED };

struct index_entry {
    uint32_t rel_offset;
    uint32_t position;
};

/* One remote segment in the cache. Guarded by the cache lock; fd and index
 * are immutable once READY and freed only on eviction. */
struct cache_entry {
    uint8_t id[16];
    int64_t base_offset;
    struct tiered_partition *p; /* lives as long as the manager */
    int64_t seg_size;           /* the copied segment's size, known before the download */
    bool ahead;                 /* queued by read-ahead, no fetch reached it yet: in p->ahead_bytes */
    bool ahead_loading;         /* queued by read-ahead, downloading, no fetch waits: in p->ahead_loading */
    enum cache_state state;
    int fd;
    int64_t size;
    struct index_entry *index;
    size_t index_count;
    int64_t last_used;
    int64_t failed_at_ms;
    uintptr_t keys[CACHE_MAX_KEYS];
    size_t key_count;
    struct cache_entry *next;
};

struct cache_job {
    struct cache_entry *entry;
    struct tiered_partition *p;
    struct tiered_segment seg; /* without its epoch arrays */
    struct cache_job *next;
};

struct tiered_cache {
    char *dir;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    pthread_cond_t landed; /* a download finished (tiered_cache_open waits on it) */
    struct cache_entry *entries;
    int64_t bytes;
    struct cache_job *jobs, *jobs_tail;
    bool stopping;
    pthread_t *readers;
    size_t reader_count;
};

static void entry_free(struct cache_entry *e)
{
    if (e->fd >= 0)
        close(e->fd);
    free(e->index);
    free(e);
}

static char *entry_path(const struct tiered_cache *c, const uint8_t id[16], const char *ext)
{
    char hex[33];
    tiered_hex(id, 16, hex);
    char *path = NULL;
    return asprintf(&path, "%s/%s%s", c->dir, hex, ext) < 0 ? NULL : path;
}

struct file_sink {
    FILE *f;
};

static int write_to_file(void *ctx, const uint8_t *data, size_t len)
{
    struct file_sink *s = ctx;
    return fwrite(data, 1, len, s->f) == len ? CAIRN_OK : CAIRN_ERROR;
}

struct memory_sink {
    uint8_t *data;
    size_t len, cap;
};

static int write_to_memory(void *ctx, const uint8_t *data, size_t len)
{
    struct memory_sink *m = ctx;
    if (m->len + len > m->cap) {
        size_t cap = (m->len + len) * 2;
        uint8_t *grown = realloc(m->data, cap);
        if (!grown)
            return CAIRN_ERROR;
        m->data = grown;
        m->cap = cap;
    }
    memcpy(m->data + m->len, data, len);
    m->len += len;
    return CAIRN_OK;
}

/* Every batch of the downloaded file: whole, inside the segment's offsets,
 * ascending, CRC intact. Returns NULL or what is wrong. */
static const char *check_segment(int fd, int64_t size, const struct tiered_segment *seg)
{
    if (size != seg->size_bytes)
        return "size differs from the copied segment";
    int64_t pos = 0, expect_from = seg->start_offset;
    uint8_t *buf = NULL;
    size_t cap = 0;
    const char *bad = NULL;
    while (!bad && pos < size) {
        uint8_t head[RECORD_BATCH_HEADER_SIZE];
        struct record_batch_header h;
        if (size - pos < RECORD_BATCH_HEADER_SIZE || pread(fd, head, sizeof head, pos) != (ssize_t)sizeof head) {
            bad = "truncated batch header";
            break;
        }
        record_batch_parse_header(head, sizeof head, &h);
        size_t total = record_batch_total_size(&h);
        if (h.batch_length < RECORD_BATCH_HEADER_SIZE - 12 || (int64_t)total > size - pos ||
            h.base_offset < expect_from || record_batch_last_offset(&h) > seg->end_offset) {
            bad = "batch framing or offsets outside the segment";
            break;
        }
        if (total > cap) {
            uint8_t *grown = realloc(buf, total);
            if (!grown) {
                bad = "out of memory";
                break;
            }
            buf = grown;
            cap = total;
        }
        if (pread(fd, buf, total, pos) != (ssize_t)total)
            bad = "short read";
        else if (!record_batch_crc_ok(buf, total))
            bad = "batch CRC mismatch";
        expect_from = record_batch_last_offset(&h) + 1;
        pos += (int64_t)total;
    }
    free(buf);
    return bad;
}

/* Fetches the segment and its offset index. Returns 0 with the file open
 * in *fd, or -1 with err. */
static int download(struct tiered *t, struct cache_job *job, int *fd, struct memory_sink *index, char *err,
                    size_t errlen)
{
    struct tiered_cache *c = t->cache;
    struct cairn_remote_segment view;
    tiered_segment_view(t, job->p, &job->seg, &view);
    char *path = entry_path(c, job->seg.id, ".log");
    char *tmp = entry_path(c, job->seg.id, ".log.tmp");
    FILE *f = tmp ? fopen(tmp, "wb") : NULL;
    int rc = -1;
    if (!path || !f) {
        snprintf(err, errlen, "cannot create %s: %s", tmp ? tmp : "a cache file", strerror(errno));
        goto out;
    }
    struct file_sink fs = {f};
    struct cairn_byte_sink sink = {sizeof sink, &fs, write_to_file};
    metrics_add(t->metrics.fetch_requests, 1);
    int status = t->rsm->fetch_segment(t->rsm_instance, &view, 0, -1, &sink, err, errlen);
    if (fclose(f) != 0 && status == CAIRN_OK) {
        snprintf(err, errlen, "cannot write %s", tmp);
        status = CAIRN_ERROR;
    }
    f = NULL;
    if (status == CAIRN_OK) {
        struct cairn_byte_sink isink = {sizeof isink, index, write_to_memory};
        status = t->rsm->fetch_index(t->rsm_instance, &view, CAIRN_REMOTE_INDEX_OFFSET, &isink, err, errlen);
        if (status == CAIRN_NOT_FOUND) {
            index->len = 0; /* scanned from the start instead */
            status = CAIRN_OK;
        }
    }
    if (status != CAIRN_OK || rename(tmp, path) != 0) {
        if (status == CAIRN_OK)
            snprintf(err, errlen, "rename %s: %s", tmp, strerror(errno));
        goto out;
    }
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (*fd < 0 || fstat(*fd, &st) != 0) {
        snprintf(err, errlen, "open %s: %s", path, strerror(errno));
        goto out;
    }
    metrics_add(t->metrics.fetch_bytes, st.st_size);
    const char *bad = check_segment(*fd, st.st_size, &job->seg);
    if (bad) {
        snprintf(err, errlen, "remote segment %" PRId64 "-%" PRId64 " is corrupt: %s", job->seg.start_offset,
                 job->seg.end_offset, bad);
        goto out;
    }
    rc = 0;
out:
    if (f)
        fclose(f);
    if (rc != 0 && *fd >= 0) {
        close(*fd);
        *fd = -1;
    }
    if (tmp)
        unlink(tmp);
    if (rc != 0 && path)
        unlink(path);
    free(path);
    free(tmp);
    return rc;
}

/* A read-ahead entry leaves the unread window of its partition. */
static void ahead_clear_locked(struct cache_entry *e)
{
    if (e->ahead) {
        e->ahead = false;
        e->p->ahead_bytes -= e->seg_size;
    }
}

static bool being_read(const struct cache_entry *e)
{
    return e->p && e->p->reading_known && memcmp(e->p->reading_id, e->id, 16) == 0;
}

/* The least recently used ready entry that may go (never keep nor one a
 * partition is reading; unread read-ahead entries only when with_ahead). */
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
 * keep and the segments being read, and unread read-ahead ones if it can. */
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
        char *path = entry_path(c, gone->id, ".log");
        if (path)
            unlink(path); /* readers holding a dup()ed fd keep the data */
        free(path);
        entry_free(gone);
    }
}

static void finish_job(struct tiered *t, struct cache_job *job)
{
    int fd = -1;
    struct memory_sink index = {0};
    char err[512] = "";
    int rc = download(t, job, &fd, &index, err, sizeof err);
    if (rc != 0) {
        metrics_add(t->metrics.fetch_errors, 1);
        logger_warn("tiered", "%s-%" PRId32 ": reading remote segment %" PRId64 " failed: %s", job->p->topic,
                    job->p->partition, job->seg.start_offset, err);
    }
    struct tiered_cache *c = t->cache;
    pthread_mutex_lock(&c->lock);
    struct cache_entry *e = job->entry;
    uintptr_t keys[CACHE_MAX_KEYS];
    size_t key_count = e->key_count;
    memcpy(keys, e->keys, key_count * sizeof keys[0]);
    e->key_count = 0;
    if (e->ahead_loading) {
        e->ahead_loading = false;
        e->p->ahead_loading--;
    }
    if (rc == 0) {
        e->state = CACHE_READY;
        e->fd = fd;
        struct stat st;
        e->size = fstat(fd, &st) == 0 ? st.st_size : 0;
        e->index_count = index.len / 8;
        e->index = e->index_count ? calloc(e->index_count, sizeof *e->index) : NULL;
        if (!e->index)
            e->index_count = 0;
        for (size_t i = 0; i < e->index_count; i++) {
            const uint8_t *b = index.data + 8 * i;
            e->index[i].rel_offset = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
            e->index[i].position = (uint32_t)b[4] << 24 | (uint32_t)b[5] << 16 | (uint32_t)b[6] << 8 | b[7];
        }
        c->bytes += e->size;
        e->last_used = clock_mono_ms();
        evict_locked(t, e);
    } else {
        e->state = CACHE_FAILED;
        e->failed_at_ms = clock_mono_ms();
        ahead_clear_locked(e);
    }
    pthread_cond_broadcast(&c->landed);
    pthread_mutex_unlock(&c->lock);
    free(index.data);
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

static struct cache_entry *cache_find_locked(struct tiered_cache *c, const uint8_t id[16])
{
    struct cache_entry *e = c->entries;
    while (e && memcmp(e->id, id, 16) != 0)
        e = e->next;
    return e;
}

/* Queues a download of seg into e (a FAILED entry retried) or a new entry;
 * returns the entry, NULL when out of memory. Caller holds the cache lock. */
static struct cache_entry *queue_download_locked(struct tiered *t, struct tiered_partition *p,
                                                 const struct tiered_segment *seg, struct cache_entry *e)
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
        e->base_offset = seg->start_offset;
        e->p = p;
        e->seg_size = seg->size_bytes;
        e->fd = -1;
        e->next = c->entries;
        c->entries = e;
    }
    e->state = CACHE_LOADING;
    *job = (struct cache_job){.entry = e, .p = p, .seg = *seg};
    if (c->jobs_tail)
        c->jobs_tail->next = job;
    else
        c->jobs = job;
    c->jobs_tail = job;
    pthread_cond_signal(&c->cond);
    /* Counted when queued, so the next read sees it (KIP-956's fetch quota). */
    tiered_quota_record(&t->fetch_quota, seg->size_bytes);
    return e;
}

/* As partition_log_read over one segment file. Caller holds the cache lock
 * (the entry stays); reads only immutable data. */
static int16_t read_entry(const struct cache_entry *e, int64_t offset, int32_t max_bytes, int64_t max_offset,
                          struct log_read_result *out)
{
    int64_t pos = 0;
    for (size_t i = 0; i < e->index_count; i++) {
        if (e->base_offset + e->index[i].rel_offset >= offset)
            break;
        pos = e->index[i].position;
    }
    int64_t first = -1, total = 0, next = offset;
    while (pos + RECORD_BATCH_HEADER_SIZE <= e->size) {
        uint8_t head[RECORD_BATCH_HEADER_SIZE];
        struct record_batch_header h;
        if (pread(e->fd, head, sizeof head, pos) != (ssize_t)sizeof head)
            return KAFKA_ERR_KAFKA_STORAGE_ERROR;
        record_batch_parse_header(head, sizeof head, &h);
        int64_t size = (int64_t)record_batch_total_size(&h);
        if (first < 0 && record_batch_last_offset(&h) < offset) {
            pos += size;
            continue;
        }
        if (record_batch_last_offset(&h) >= max_offset || (total > 0 && total + size > (int64_t)max_bytes))
            break;
        if (first < 0)
            first = pos;
        total += size;
        pos += size;
        next = record_batch_last_offset(&h) + 1;
    }
    if (total > 0) {
        out->fd = dup(e->fd);
        if (out->fd < 0)
            return KAFKA_ERR_KAFKA_STORAGE_ERROR;
        out->file_pos = first;
        out->len = total;
        out->next_offset = next;
    }
    return KAFKA_ERR_NONE;
}

int16_t tiered_cache_open(struct tiered *t, struct tiered_partition *p, const struct tiered_segment *seg,
                          int64_t timeout_ms, int *fd, int64_t *size)
{
    struct tiered_cache *c = t->cache;
    *fd = -1;
    *size = 0;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    bool queued = false;
    int16_t rc = KAFKA_ERR_NONE;
    pthread_mutex_lock(&c->lock);
    for (;;) {
        struct cache_entry *e = cache_find_locked(c, seg->id);
        int64_t now = clock_mono_ms();
        if (e && e->state == CACHE_READY) {
            e->last_used = now;
            metrics_add(t->metrics.cache_hits, 1);
            *fd = dup(e->fd);
            *size = e->size;
            rc = *fd < 0 ? KAFKA_ERR_KAFKA_STORAGE_ERROR : KAFKA_ERR_NONE;
            break;
        }
        /* Our own download failed, or a recent one did: the store is
         * unavailable or holds bad data (retriable, as for a fetch). */
        if (c->stopping || (e && e->state == CACHE_FAILED && (queued || now - e->failed_at_ms < CACHE_RETRY_MS))) {
            rc = KAFKA_ERR_KAFKA_STORAGE_ERROR;
            break;
        }
        if (!e || e->state == CACHE_FAILED) {
            metrics_add(t->metrics.cache_misses, 1);
            if (!queue_download_locked(t, p, seg, e)) {
                rc = KAFKA_ERR_KAFKA_STORAGE_ERROR;
                break;
            }
            queued = true;
        }
        if (pthread_cond_timedwait(&c->landed, &c->lock, &until) == ETIMEDOUT) {
            rc = KAFKA_ERR_REQUEST_TIMED_OUT;
            break;
        }
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
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

/* Queues the downloads of the segments after seg that a sequential reader
 * reaches next, within the partition's in-flight and cache budgets. */
static void read_ahead_locked(struct tiered *t, struct tiered_partition *p, const struct tiered_segment *seg,
                              const struct tiered_segment *next, size_t next_count)
{
    struct tiered_cache *c = t->cache;
    for (size_t i = 0; i < next_count && !c->stopping; i++) {
        if (cache_find_locked(c, next[i].id))
            continue; /* cached, downloading, or failed (a fetch retries that) */
        if (p->ahead_loading >= t->opts.read_ahead_segments ||
            seg->size_bytes + p->ahead_bytes + next[i].size_bytes > t->opts.cache_bytes ||
            tiered_quota_exceeded(&t->fetch_quota))
            return;
        struct cache_entry *e = queue_download_locked(t, p, &next[i], NULL);
        if (!e)
            return;
        e->ahead = true;
        e->ahead_loading = true;
        p->ahead_loading++;
        p->ahead_bytes += next[i].size_bytes;
        metrics_add(t->metrics.read_ahead_started, 1);
    }
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
    struct cache_entry *e = cache_find_locked(c, seg.id);
    int64_t now = clock_mono_ms();
    enum tiered_read_status status = TIERED_READ_PENDING;
    int64_t throttle_ms = 0;
    if (e && e->ahead) {
        if (e->state == CACHE_READY)
            metrics_add(t->metrics.read_ahead_hits, 1);
        ahead_clear_locked(e);
    }
    if (e && e->ahead_loading) {
        /* A fetch waits for it now: no longer ahead, so the next one may start. */
        e->ahead_loading = false;
        e->p->ahead_loading--;
    }
    if (e && e->state == CACHE_READY) {
        e->last_used = now;
        metrics_add(t->metrics.cache_hits, 1);
        *kafka_error = read_entry(e, offset, max_bytes, max_offset, out);
        status = *kafka_error == KAFKA_ERR_NONE ? TIERED_READ_DONE : TIERED_READ_ERROR;
    } else if (c->stopping || (e && e->state == CACHE_FAILED && now - e->failed_at_ms < CACHE_RETRY_MS)) {
        *kafka_error = KAFKA_ERR_KAFKA_STORAGE_ERROR; /* retriable: the client tries again */
        status = TIERED_READ_ERROR;
    } else if ((!e || e->state == CACHE_FAILED) && (throttle_ms = tiered_quota_throttle_ms(&t->fetch_quota)) > 0) {
        /* KIP-956: over the remote fetch quota, no new download; this
         * partition answers empty this round and the consumer asks again. */
        metrics_add(t->metrics.fetch_throttled, 1);
        metrics_add(t->metrics.fetch_throttle_ms, throttle_ms);
        status = TIERED_READ_DONE;
    } else {
        if (!e || e->state == CACHE_FAILED) {
            metrics_add(t->metrics.cache_misses, 1);
            e = queue_download_locked(t, p, &seg, e);
        }
        if (!e) {
            *kafka_error = KAFKA_ERR_KAFKA_STORAGE_ERROR;
            status = TIERED_READ_ERROR;
        } else {
            bool known = false;
            for (size_t i = 0; i < e->key_count; i++)
                known |= e->keys[i] == key;
            if (!known && e->key_count < CACHE_MAX_KEYS)
                e->keys[e->key_count++] = key;
        }
    }
    if (status != TIERED_READ_ERROR) {
        memcpy(p->reading_id, seg.id, 16);
        p->reading_known = true;
        read_ahead_locked(t, p, &seg, next, next_count);
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
