/* The remote read cache's entries and queue (tiered_fetch.c), shared with
 * the timestamp lookups (tiered_timestamp.c) that wait on them. Everything
 * here is guarded by the cache lock. */
#ifndef CAIRN_TIERED_TIERED_CACHE_H
#define CAIRN_TIERED_TIERED_CACHE_H

#include "tiered/tiered_chunk.h"
#include "tiered/tiered_internal.h"

#define CACHE_RETRY_MS 1000   /* a failed download is retried by the next read after this */
#define CACHE_MAX_KEYS 64     /* waiters remembered per download; more are woken by their deadline */
#define INDEX_CHUNK (-1)      /* the entry of a segment's offset index, not of a chunk */
#define TIME_INDEX_CHUNK (-2) /* the entry of a segment's time index (timestamp lookups) */
#define INDEX_MIN_CHARGE 4096
#define READ_AHEAD_IN_FLIGHT 4 /* read-ahead downloads per partition at most */

enum cache_state { CACHE_LOADING, CACHE_READY, CACHE_FAILED };

/* A segment's offset index (chunk INDEX_CHUNK), time index
 * (TIME_INDEX_CHUNK) or one of its chunks.
 * Guarded by the cache lock; fd, index and chunk_starts are immutable once
 * READY and freed only on eviction. */
struct cache_entry {
    uint8_t id[16];
    int64_t chunk;
    int64_t base_offset;
    struct tiered_partition *p; /* lives as long as the manager */
    int64_t seg_size;           /* the copied segment's size */
    int64_t start;              /* a chunk's first byte in the segment */
    int64_t size;               /* a chunk's bytes (known before its download); an index's memory */
    bool ahead;                 /* chunk queued by read-ahead, no fetch reached it yet: in p->ahead_bytes */
    bool ahead_loading;         /* queued by read-ahead, downloading, no fetch waits: in p->ahead_loading */
    bool ahead_first_chunk;     /* index queued by read-ahead: chunk 0 follows it ahead */
    enum cache_state state;
    int fd;
    struct tiered_index_entry *index;
    size_t index_count;
    struct tiered_time_entry *times;
    size_t time_count;
    int64_t *chunk_starts; /* ascending from 0; chunk k ends at chunk_starts[k + 1] or seg_size */
    size_t chunk_count;
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
    int64_t chunk, start, end;
    struct cache_job *next;
};

struct tiered_cache {
    char *dir;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    pthread_cond_t landed; /* a download finished (timestamp lookups wait on it) */
    struct cache_entry *entries;
    int64_t bytes; /* chunk files and index memory, bounded by opts.cache_bytes */
    struct cache_job *jobs, *jobs_tail;
    bool stopping;
    pthread_t *readers;
    size_t reader_count;
};

/* Chunk k of the segment indexed by ie ends here (the next chunk's start
 * or the segment's end). */
int64_t tiered_cache_chunk_end(const struct cache_entry *ie, size_t k);
/* The position of the last indexed batch below offset (0 when none). */
int64_t tiered_cache_floor_position(const struct cache_entry *ie, int64_t offset);
/* The chunk holding segment position pos. */
size_t tiered_cache_chunk_of(const struct cache_entry *ie, int64_t pos);
struct cache_entry *tiered_cache_find_locked(struct tiered_cache *c, const uint8_t id[16], int64_t chunk);
/* Queues a download of chunk [start, end) of seg (or of an index: chunk
 * INDEX_CHUNK or TIME_INDEX_CHUNK) into e (a FAILED entry retried) or a new
 * entry; returns the entry, NULL when out of memory. */
struct cache_entry *tiered_cache_queue_locked(struct tiered *t, struct tiered_partition *p,
                                              const struct tiered_segment *seg, int64_t chunk, int64_t start,
                                              int64_t end, struct cache_entry *e);
/* A read touches entry e (maybe NULL): no longer read-ahead. */
void tiered_cache_touch_locked(struct tiered *t, struct cache_entry *e);

#endif
