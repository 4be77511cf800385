/* ListOffsets by timestamp across remote segments: the first offset whose
 * record timestamp is at or after the target, as Kafka answers, searched in
 * the remote segments (oldest first) before the local log. The segment
 * list's max timestamps pick the segment; its time index and offset index
 * give the position where the search starts (past every entry older than
 * the target), and the segment is walked from there chunk by chunk through
 * the chunk cache, opening the one batch that holds the answer: usually one
 * chunk is read, not the whole segment. Runs on a blocking-work thread and
 * waits for downloads done by the remote log reader threads, bounded by
 * the caller's timeout (ListOffsets v10's TimeoutMs), as Kafka before
 * KIP-1075 did. */
#include "tiered/tiered_cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "codec/record_codec.h"
#include "protocol/generated/errors.h"
#include "protocol/record_batch.h"
#include "util/clock.h"

/* Most bytes a compressed batch is opened to: the broker accepted it once
 * under its own limit, so this only guards against a store's bad data. */
#define TIERED_TS_INFLATE_LIMIT ((size_t)256 << 20)

/* A timestamp lookup's wait for entry chunk of seg (cache lock held): the
 * entry when READY; else NULL with *rc KAFKA_STORAGE_ERROR (the store
 * failed or holds bad data, since since_ms or within the retry delay),
 * REQUEST_TIMED_OUT (deadline_ms passed) or NONE after waiting for a
 * download to land (look again: entries may have gone meanwhile). Queues
 * the download on a reader thread when missing; never downloads itself. */
static struct cache_entry *wait_ready_locked(struct tiered *t, struct tiered_partition *p,
                                             const struct tiered_segment *seg, int64_t chunk, int64_t start,
                                             int64_t end, int64_t since_ms, int64_t deadline_ms, int16_t *rc)
{
    struct tiered_cache *c = t->cache;
    *rc = KAFKA_ERR_NONE;
    struct cache_entry *e = tiered_cache_find_locked(c, seg->id, chunk);
    int64_t now = clock_mono_ms();
    if (e && e->state == CACHE_READY) {
        e->last_used = now;
        tiered_cache_touch_locked(t, e);
        metrics_add(t->metrics.cache_hits, 1);
        return e;
    }
    if (c->stopping ||
        (e && e->state == CACHE_FAILED && (e->failed_at_ms >= since_ms || now - e->failed_at_ms < CACHE_RETRY_MS))) {
        *rc = KAFKA_ERR_KAFKA_STORAGE_ERROR;
        return NULL;
    }
    if (!e || e->state == CACHE_FAILED) {
        metrics_add(t->metrics.cache_misses, 1);
        if (!tiered_cache_queue_locked(t, p, seg, chunk, start, end, e)) {
            *rc = KAFKA_ERR_KAFKA_STORAGE_ERROR;
            return NULL;
        }
    }
    int64_t left_ms = deadline_ms - now;
    if (left_ms <= 0) {
        *rc = KAFKA_ERR_REQUEST_TIMED_OUT;
        return NULL;
    }
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += left_ms / 1000;
    until.tv_nsec += (left_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&c->landed, &c->lock, &until);
    if (clock_mono_ms() >= deadline_ms)
        *rc = KAFKA_ERR_REQUEST_TIMED_OUT;
    return NULL;
}

/* The segment position from which to search seg for the first record at
 * or after timestamp ts and offset min_offset, from its time and offset
 * indexes (0 without them). KAFKA_ERR_NONE, KAFKA_STORAGE_ERROR or
 * REQUEST_TIMED_OUT (deadline_ms passed, monotonic clock). */
static int16_t cached_search_start(struct tiered *t, struct tiered_partition *p, const struct tiered_segment *seg,
                                   int64_t ts, int64_t min_offset, int64_t deadline_ms, int64_t *pos)
{
    struct tiered_cache *c = t->cache;
    int64_t since = clock_mono_ms();
    int16_t rc = KAFKA_ERR_NONE;
    *pos = 0;
    pthread_mutex_lock(&c->lock);
    for (;;) {
        struct cache_entry *ie = wait_ready_locked(t, p, seg, INDEX_CHUNK, 0, 0, since, deadline_ms, &rc);
        if (!ie) {
            if (rc != KAFKA_ERR_NONE)
                break;
            continue;
        }
        struct cache_entry *te = wait_ready_locked(t, p, seg, TIME_INDEX_CHUNK, 0, 0, since, deadline_ms, &rc);
        if (!te) {
            if (rc != KAFKA_ERR_NONE)
                break;
            continue; /* ie may be gone after the wait */
        }
        /* Every record up to an entry's offset is older than the entry's
         * timestamp: below ts, the answer lies past that offset. */
        int64_t from = min_offset;
        for (size_t i = 0; i < te->time_count && te->times[i].timestamp < ts; i++)
            if (seg->start_offset + te->times[i].rel_offset + 1 > from)
                from = seg->start_offset + te->times[i].rel_offset + 1;
        *pos = tiered_cache_floor_position(ie, from);
        break;
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

/* The cached chunk of seg holding position pos: *fd (the caller closes
 * it), the chunk's first byte in the segment *start and its *size; errors
 * as cached_search_start. */
static int16_t cached_chunk_open(struct tiered *t, struct tiered_partition *p, const struct tiered_segment *seg,
                                 int64_t pos, int64_t deadline_ms, int *fd, int64_t *start, int64_t *size)
{
    struct tiered_cache *c = t->cache;
    int64_t since = clock_mono_ms();
    int16_t rc = KAFKA_ERR_NONE;
    *fd = -1;
    pthread_mutex_lock(&c->lock);
    for (;;) {
        struct cache_entry *ie = wait_ready_locked(t, p, seg, INDEX_CHUNK, 0, 0, since, deadline_ms, &rc);
        if (!ie) {
            if (rc != KAFKA_ERR_NONE)
                break;
            continue;
        }
        size_t k = tiered_cache_chunk_of(ie, pos);
        struct cache_entry *e = wait_ready_locked(t, p, seg, (int64_t)k, ie->chunk_starts[k],
                                                  tiered_cache_chunk_end(ie, k), since, deadline_ms, &rc);
        if (!e) {
            if (rc != KAFKA_ERR_NONE)
                break;
            continue;
        }
        *fd = dup(e->fd);
        *start = e->start;
        *size = e->size;
        rc = *fd < 0 ? KAFKA_ERR_KAFKA_STORAGE_ERROR : KAFKA_ERR_NONE;
        break;
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

/* The first finished remote segment at or after from_offset whose max
 * timestamp reaches ts and which holds offsets at or after log_start;
 * copied into out without its arrays. */
static bool next_candidate(struct tiered_partition *p, int64_t from_offset, int64_t log_start, int64_t ts,
                           struct tiered_segment *out)
{
    bool found = false;
    pthread_mutex_lock(&p->lock);
    for (size_t i = 0; i < p->count && !found; i++) {
        const struct tiered_segment *s = &p->segs[i];
        if (s->state != TIERED_COPY_FINISHED || s->end_offset < from_offset || s->end_offset < log_start ||
            s->max_timestamp_ms < ts)
            continue;
        *out = *s;
        out->epochs = NULL;
        out->epoch_starts = NULL;
        out->epoch_count = 0;
        out->aborted = NULL;
        out->aborted_count = 0;
        found = true;
    }
    pthread_mutex_unlock(&p->lock);
    return found;
}

/* Walks a chunk file (size bytes of whole batches) from file position pos
 * for the first record with timestamp >= ts and offset >= min_offset.
 * Returns 1 found, 0 not in this chunk, -1 bad data. */
static int scan_chunk(int fd, int64_t size, int64_t pos, int64_t ts, int64_t min_offset, int64_t *offset,
                      int64_t *timestamp)
{
    uint8_t *buf = NULL, *plain = NULL;
    size_t cap = 0, plain_cap = 0;
    int rc = 0;
    while (rc == 0 && pos + RECORD_BATCH_HEADER_SIZE <= size) {
        uint8_t head[RECORD_BATCH_HEADER_SIZE];
        struct record_batch_header h;
        if (pread(fd, head, sizeof head, pos) != (ssize_t)sizeof head) {
            rc = -1;
            break;
        }
        record_batch_parse_header(head, sizeof head, &h);
        size_t total = record_batch_total_size(&h);
        if (h.batch_length < RECORD_BATCH_HEADER_SIZE - 12 || (int64_t)total > size - pos) {
            rc = -1;
            break;
        }
        if (h.max_timestamp >= ts && record_batch_last_offset(&h) >= min_offset) {
            if (total > cap) {
                uint8_t *grown = realloc(buf, total);
                if (!grown) {
                    rc = -1;
                    break;
                }
                buf = grown;
                cap = total;
            }
            if (pread(fd, buf, total, pos) != (ssize_t)total) {
                rc = -1;
                break;
            }
            const uint8_t *records = buf;
            size_t len = total;
            if (record_batch_compression(&h) != RECORD_BATCH_COMPRESSION_NONE) {
                char err[160];
                if (record_codec_inflate_batch_into(buf, total, TIERED_TS_INFLATE_LIMIT, &plain, &plain_cap, &len, err,
                                                    sizeof err) != 0) {
                    rc = -1;
                    break;
                }
                records = plain;
            }
            struct record_batch_record_iter it;
            struct record_batch_record rec;
            if (record_batch_records_begin(&it, records, len) != 0) {
                rc = -1;
                break;
            }
            int more;
            while (rc == 0 && (more = record_batch_records_next(&it, &rec)) == 1) {
                if (rec.timestamp >= ts && rec.offset >= min_offset) {
                    *offset = rec.offset;
                    *timestamp = rec.timestamp;
                    rc = 1;
                }
            }
            if (rc == 0 && more < 0)
                rc = -1;
        }
        pos += (int64_t)total;
    }
    free(buf);
    free(plain);
    return rc;
}

int16_t tiered_offset_for_timestamp(struct tiered *t, struct partition_log *log, const char *topic, int32_t partition,
                                    int64_t ts, int64_t timeout_ms, int64_t *offset, int64_t *timestamp)
{
    *offset = -1;
    *timestamp = -1;
    if (!t)
        return KAFKA_ERR_NONE;
    pthread_mutex_lock(&t->lock);
    struct tiered_partition *p = tiered_partition_find_locked(t, topic, partition);
    pthread_mutex_unlock(&t->lock);
    if (!p)
        return KAFKA_ERR_NONE;
    int64_t log_start = partition_log_start_offset(log);
    int64_t local_start = partition_log_local_start_offset(log);
    int64_t from = log_start;
    int64_t deadline_ms = clock_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    struct tiered_segment seg;
    /* Only the part below the local start: the local log answers the rest. */
    while (from < local_start && next_candidate(p, from, log_start, ts, &seg)) {
        if (seg.start_offset >= local_start)
            break;
        int64_t pos;
        int16_t rc = cached_search_start(t, p, &seg, ts, log_start, deadline_ms, &pos);
        while (rc == KAFKA_ERR_NONE && pos < seg.size_bytes) {
            int fd;
            int64_t chunk_start, chunk_size;
            rc = cached_chunk_open(t, p, &seg, pos, deadline_ms, &fd, &chunk_start, &chunk_size);
            if (rc != KAFKA_ERR_NONE)
                break;
            int found = pos >= chunk_start && pos < chunk_start + chunk_size
                            ? scan_chunk(fd, chunk_size, pos - chunk_start, ts, log_start, offset, timestamp)
                            : -1;
            close(fd);
            if (found < 0) {
                tiered_count_error(t, TIERED_OP_FETCH, TIERED_ERROR_CORRUPT);
                return KAFKA_ERR_KAFKA_STORAGE_ERROR;
            }
            if (found == 1)
                return KAFKA_ERR_NONE;
            pos = chunk_start + chunk_size; /* the next chunk */
        }
        if (rc != KAFKA_ERR_NONE)
            return rc;
        from = seg.end_offset + 1;
    }
    return KAFKA_ERR_NONE;
}
