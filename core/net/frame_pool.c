#include "net/frame_pool.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define FRAME_POOL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FRAME_POOL_ASAN 1
#endif
#endif
#ifdef FRAME_POOL_ASAN
#include <sanitizer/asan_interface.h>
/* Mapped memory is not watched by the sanitizer: a kept buffer is marked
 * unaddressable until it is taken again, so a request freed and then read
 * still trips it. */
#define FRAME_POOL_POISON(mem, len) ASAN_POISON_MEMORY_REGION((mem), (len))
#define FRAME_POOL_UNPOISON(mem, len) ASAN_UNPOISON_MEMORY_REGION((mem), (len))
#else
#define FRAME_POOL_POISON(mem, len) ((void)(mem), (void)(len))
#define FRAME_POOL_UNPOISON(mem, len) ((void)(mem), (void)(len))
#endif

static size_t page_round_up(size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return (n + page - 1) / page * page;
}

void net_frame_pool_init(struct net_frame_pool *pool)
{
    memset(pool, 0, sizeof(*pool));
    pthread_mutex_init(&pool->lock, NULL);
    pool->kept_bytes_gauge = metrics_register(
        METRICS_GAUGE, "cairn_request_frame_pool_bytes", NULL,
        "Bytes of large request-frame buffers kept for reuse (at most 64 MiB per listener "
        "set, each unmapped after 30 s unused).");
    pool->reused_total = metrics_register(METRICS_COUNTER, "cairn_request_frame_pool_reused_total", NULL,
                                          "Large request frames read into a kept buffer instead of a fresh one.");
}

void net_frame_pool_destroy(struct net_frame_pool *pool)
{
    for (int i = 0; i < pool->kept_count; i++) {
        FRAME_POOL_UNPOISON(pool->kept[i].mem, pool->kept[i].cap);
        munmap(pool->kept[i].mem, pool->kept[i].cap);
    }
    metrics_add(pool->kept_bytes_gauge, -(int64_t)pool->kept_bytes);
    pool->kept_count = 0;
    pool->kept_bytes = 0;
    pthread_mutex_destroy(&pool->lock);
}

/* Removes slot i; the pool's lock is held. */
static struct net_frame_buffer pool_remove(struct net_frame_pool *pool, int i)
{
    struct net_frame_buffer b = pool->kept[i];
    pool->kept[i] = pool->kept[--pool->kept_count];
    pool->kept_bytes -= b.cap;
    metrics_add(pool->kept_bytes_gauge, -(int64_t)b.cap);
    return b;
}

uint8_t *net_frame_pool_take(struct net_frame_pool *pool, size_t frame_len, size_t initial, size_t *cap)
{
    pthread_mutex_lock(&pool->lock);
    int fit = -1, largest = -1;
    for (int i = 0; i < pool->kept_count; i++) {
        size_t c = pool->kept[i].cap;
        if (c >= frame_len && (fit < 0 || c < pool->kept[fit].cap))
            fit = i;
        if (largest < 0 || c > pool->kept[largest].cap)
            largest = i;
    }
    int pick = fit >= 0 ? fit : largest;
    if (pick >= 0 && pool->kept[pick].cap < initial)
        pick = -1;
    if (pick >= 0) {
        struct net_frame_buffer b = pool_remove(pool, pick);
        pthread_mutex_unlock(&pool->lock);
        metrics_add(pool->reused_total, 1);
        FRAME_POOL_UNPOISON(b.mem, b.cap);
        *cap = b.cap;
        return b.mem;
    }
    pthread_mutex_unlock(&pool->lock);
    size_t len = page_round_up(initial);
    void *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return NULL;
    *cap = len;
    return mem;
}

uint8_t *net_frame_pool_grow(uint8_t *mem, size_t *cap, size_t frame_len)
{
    size_t want = *cap * 2;
    size_t whole = page_round_up(frame_len);
    if (want > whole)
        want = whole;
    if (want <= *cap)
        return mem;
    /* The kernel moves page-table entries, not bytes. */
    void *grown = mremap(mem, *cap, want, MREMAP_MAYMOVE);
    if (grown == MAP_FAILED)
        return NULL;
    *cap = want;
    return grown;
}

void net_frame_pool_fence(uint8_t *mem, size_t cap, size_t len)
{
    if (len < cap)
        FRAME_POOL_POISON(mem + len, cap - len);
}

void net_frame_pool_give(struct net_frame_pool *pool, uint8_t *mem, size_t cap, int64_t now_ms)
{
    if (!mem)
        return;
    if (cap <= NET_FRAME_POOL_MAX_BUFFER) {
        pthread_mutex_lock(&pool->lock);
        if (pool->kept_count < NET_FRAME_POOL_SLOTS && pool->kept_bytes + cap <= NET_FRAME_POOL_MAX_BYTES) {
            FRAME_POOL_POISON(mem, cap);
            pool->kept[pool->kept_count++] = (struct net_frame_buffer){mem, cap, now_ms};
            pool->kept_bytes += cap;
            metrics_add(pool->kept_bytes_gauge, (int64_t)cap);
            pthread_mutex_unlock(&pool->lock);
            return;
        }
        pthread_mutex_unlock(&pool->lock);
    }
    FRAME_POOL_UNPOISON(mem, cap);
    munmap(mem, cap);
}

void net_frame_pool_trim(struct net_frame_pool *pool, int64_t now_ms)
{
    struct net_frame_buffer stale[NET_FRAME_POOL_SLOTS];
    int n = 0;
    pthread_mutex_lock(&pool->lock);
    for (int i = 0; i < pool->kept_count;) {
        if (now_ms - pool->kept[i].kept_since_ms >= NET_FRAME_POOL_IDLE_MS)
            stale[n++] = pool_remove(pool, i);
        else
            i++;
    }
    pthread_mutex_unlock(&pool->lock);
    for (int i = 0; i < n; i++) {
        FRAME_POOL_UNPOISON(stale[i].mem, stale[i].cap);
        munmap(stale[i].mem, stale[i].cap);
    }
}
