/* Buffers for large request frames (above NET_FRAME_INITIAL_BYTES).
 *
 * A large frame's buffer is a private mapping grown in place with mremap,
 * so growing it as bytes arrive copies nothing, and it is kept after its
 * request is freed (up to NET_FRAME_POOL_MAX_BYTES, for
 * NET_FRAME_POOL_IDLE_MS), so the next large frame finds pages already
 * faulted in. Without it each multi-megabyte Produce was copied at every
 * doubling and faulted its pages in anew: about 85 % of the broker's CPU
 * for a client sending 4 MiB frames back to back.
 *
 * Thread safety: every function may be called from any thread; the pool's
 * lock is held only to pick or file a buffer, never across a system call
 * that maps memory. */
#ifndef CAIRN_NET_FRAME_POOL_H
#define CAIRN_NET_FRAME_POOL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "metrics/metrics.h"

/* Kept buffers, all together, at most. */
#define NET_FRAME_POOL_MAX_BYTES ((size_t)64 << 20)
/* A buffer larger than this is unmapped when its request is freed. */
#define NET_FRAME_POOL_MAX_BUFFER ((size_t)16 << 20)
#define NET_FRAME_POOL_SLOTS 32
/* A kept buffer not taken again within this long is unmapped. */
#define NET_FRAME_POOL_IDLE_MS 30000

struct net_frame_buffer {
    uint8_t *mem;
    size_t cap;            /* bytes mapped, a multiple of the page size */
    int64_t kept_since_ms; /* when it was given back */
};

struct net_frame_pool {
    pthread_mutex_t lock;
    struct net_frame_buffer kept[NET_FRAME_POOL_SLOTS];
    int kept_count;
    size_t kept_bytes;
    struct metrics_metric *kept_bytes_gauge; /* cairn_request_frame_pool_bytes */
    struct metrics_metric *reused_total;     /* cairn_request_frame_pool_reused_total */
};

void net_frame_pool_init(struct net_frame_pool *pool);
/* Unmaps every kept buffer; no buffer may be out. */
void net_frame_pool_destroy(struct net_frame_pool *pool);

/* A buffer for a frame of frame_len bytes: the smallest kept one that
 * holds it whole, else the largest kept one (grown as bytes arrive), else
 * a fresh mapping of at least `initial` bytes. *cap is set to its size.
 * NULL when out of memory. */
uint8_t *net_frame_pool_take(struct net_frame_pool *pool, size_t frame_len, size_t initial, size_t *cap);

/* Grows a buffer from net_frame_pool_take to twice its size, at most
 * frame_len rounded up to a page; returns the (perhaps moved) buffer and
 * sets *cap, or NULL when out of memory (the buffer is then unchanged). */
uint8_t *net_frame_pool_grow(uint8_t *mem, size_t *cap, size_t frame_len);

/* Marks a buffer's bytes past len unaddressable under AddressSanitizer,
 * so a read past a complete frame is caught as it is in a malloc'd one. */
void net_frame_pool_fence(uint8_t *mem, size_t cap, size_t len);

/* Gives a buffer back: kept when it fits the pool's bounds, else unmapped. */
void net_frame_pool_give(struct net_frame_pool *pool, uint8_t *mem, size_t cap, int64_t now_ms);

/* Unmaps buffers kept for longer than NET_FRAME_POOL_IDLE_MS. */
void net_frame_pool_trim(struct net_frame_pool *pool, int64_t now_ms);

#endif
