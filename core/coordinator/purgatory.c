#include "coordinator/purgatory.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metrics/metrics.h"
#include "util/clock.h"
#include "util/lock_check.h"
#include "util/logger.h"

#define WATCH_BUCKETS 1024

/* One operation watching one key. An operation appears once per distinct
 * key it watches, so a notify attempts each watcher once. */
struct watch_entry {
    struct delayed_op *op;
    uintptr_t key;
};

struct watch_list {
    struct watch_entry *entries;
    int count, cap;
};

/* All lists and reference counts are guarded by `lock`; an operation's own
 * lock serializes its try_complete calls. */
struct purgatory {
    char name[32];
    pthread_mutex_t lock;
    pthread_cond_t wake;
    struct watch_list buckets[WATCH_BUCKETS];
    struct delayed_op **heap; /* min-heap by deadline */
    int64_t heap_len, heap_cap;
    bool stopping;
    bool draining; /* purgatory_expire_all was called: new operations get no wait */
    pthread_t expiry_thread;
    struct metrics_metric *waiting; /* heap_len, for /metrics; may be NULL */
};

static size_t bucket_of(uintptr_t key)
{
    uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 54) % WATCH_BUCKETS;
}

static void heap_swap(struct purgatory *p, int64_t a, int64_t b)
{
    struct delayed_op *t = p->heap[a];
    p->heap[a] = p->heap[b];
    p->heap[b] = t;
    p->heap[a]->heap_index = a;
    p->heap[b]->heap_index = b;
}

static void heap_up(struct purgatory *p, int64_t i)
{
    while (i > 0) {
        int64_t parent = (i - 1) / 2;
        if (p->heap[parent]->deadline_mono_ms <= p->heap[i]->deadline_mono_ms)
            break;
        heap_swap(p, parent, i);
        i = parent;
    }
}

static void heap_down(struct purgatory *p, int64_t i)
{
    for (;;) {
        int64_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < p->heap_len && p->heap[l]->deadline_mono_ms < p->heap[m]->deadline_mono_ms)
            m = l;
        if (r < p->heap_len && p->heap[r]->deadline_mono_ms < p->heap[m]->deadline_mono_ms)
            m = r;
        if (m == i)
            return;
        heap_swap(p, i, m);
        i = m;
    }
}

static void heap_remove(struct purgatory *p, struct delayed_op *op)
{
    int64_t i = op->heap_index;
    if (i < 0 || i >= p->heap_len || p->heap[i] != op)
        return;
    p->heap_len--;
    metrics_set(p->waiting, p->heap_len);
    if (i != p->heap_len) {
        p->heap[i] = p->heap[p->heap_len];
        p->heap[i]->heap_index = i;
        heap_down(p, i);
        heap_up(p, i);
    }
    op->heap_index = -1;
}

static void watch_remove(struct purgatory *p, struct delayed_op *op)
{
    for (int k = 0; k < op->watch_key_count; k++) {
        struct watch_list *wl = &p->buckets[bucket_of(op->watch_keys[k])];
        for (int i = 0; i < wl->count; i++) {
            if (wl->entries[i].op == op && wl->entries[i].key == op->watch_keys[k]) {
                wl->entries[i] = wl->entries[--wl->count];
                break;
            }
        }
    }
}

static int compare_keys(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

/* Sorts the keys and drops repeats: a fetch naming one partition D times
 * must not be woken D times by one append. */
static void unique_keys(struct delayed_op *op)
{
    if (op->watch_key_count < 2)
        return;
    qsort(op->watch_keys, (size_t)op->watch_key_count, sizeof *op->watch_keys, compare_keys);
    int n = 1;
    for (int i = 1; i < op->watch_key_count; i++)
        if (op->watch_keys[i] != op->watch_keys[n - 1])
            op->watch_keys[n++] = op->watch_keys[i];
    op->watch_key_count = n;
}

int delayed_op_watch(struct delayed_op *op, uintptr_t key)
{
    if (op->watch_key_count == 0 && op->watch_key_cap == 0) {
        op->watch_keys = op->watch_inline_keys;
        op->watch_key_cap = DELAYED_OP_INLINE_KEYS;
    }
    if (op->watch_key_count == op->watch_key_cap) {
        if (op->watch_key_cap > INT32_MAX / 2)
            return -1;
        int cap = op->watch_key_cap * 2;
        uintptr_t *keys;
        if (op->watch_keys == op->watch_inline_keys) {
            keys = malloc((size_t)cap * sizeof *keys);
            if (keys)
                memcpy(keys, op->watch_inline_keys, sizeof op->watch_inline_keys);
        } else {
            keys = realloc(op->watch_keys, (size_t)cap * sizeof *keys);
        }
        if (!keys)
            return -1;
        op->watch_keys = keys;
        op->watch_key_cap = cap;
    }
    op->watch_keys[op->watch_key_count++] = key;
    return 0;
}

void delayed_op_release_keys(struct delayed_op *op)
{
    if (op->watch_keys && op->watch_keys != op->watch_inline_keys)
        free(op->watch_keys);
    op->watch_keys = NULL;
    op->watch_key_count = 0;
    op->watch_key_cap = 0;
}

static void op_unref_locked(struct purgatory *p, struct delayed_op *op)
{
    (void)p; /* read by the debug-build check only */
    LOCK_ASSERT_HELD(&p->lock);
    if (--op->refs == 0) {
        delayed_op_release_keys(op);
        pthread_mutex_destroy(&op->lock);
        op->free_fn(op);
    }
}

/* Runs try_complete once; on completion detaches the operation. Caller holds a reference. */
static void op_attempt(struct purgatory *p, struct delayed_op *op, bool expired)
{
    pthread_mutex_lock(&op->lock);
    bool completed = false;
    if (!op->done) {
        completed = op->try_complete(op, expired);
        if (completed)
            op->done = true;
    }
    pthread_mutex_unlock(&op->lock);
    if (completed) {
        pthread_mutex_lock(&p->lock);
        watch_remove(p, op);
        if (op->heap_index >= 0) {
            heap_remove(p, op);
            op_unref_locked(p, op); /* the purgatory's reference */
        }
        pthread_mutex_unlock(&p->lock);
    }
}

static void *expiry_main(void *arg)
{
    struct purgatory *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        if (p->stopping && p->heap_len == 0)
            break;
        int64_t now = clock_mono_ms();
        if (p->heap_len > 0 && (p->stopping || p->heap[0]->deadline_mono_ms <= now)) {
            struct delayed_op *op = p->heap[0];
            op->refs++;
            pthread_mutex_unlock(&p->lock);
            op_attempt(p, op, true);
            pthread_mutex_lock(&p->lock);
            op_unref_locked(p, op);
            continue;
        }
        if (p->heap_len == 0) {
            pthread_cond_wait(&p->wake, &p->lock);
        } else {
            int64_t wait_ms = p->heap[0]->deadline_mono_ms - now;
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            ts.tv_sec += wait_ms / 1000;
            ts.tv_nsec += (wait_ms % 1000) * 1000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&p->wake, &p->lock, &ts);
        }
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

int purgatory_create(const char *name, struct purgatory **out)
{
    struct purgatory *p = calloc(1, sizeof *p);
    if (!p)
        return -1;
    snprintf(p->name, sizeof p->name, "%s", name);
    char labels[64];
    snprintf(labels, sizeof labels, "purgatory=\"%s\"", p->name);
    p->waiting = metrics_register(METRICS_GAUGE, "cairn_purgatory_waiting", labels,
                                  "Delayed requests waiting in a purgatory.");
    pthread_mutex_init(&p->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&p->wake, &attr);
    pthread_condattr_destroy(&attr);
    if (pthread_create(&p->expiry_thread, NULL, expiry_main, p) != 0) {
        pthread_mutex_destroy(&p->lock);
        pthread_cond_destroy(&p->wake);
        free(p);
        return -1;
    }
    *out = p;
    return 0;
}

void purgatory_destroy(struct purgatory *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->expiry_thread, NULL);
    for (int i = 0; i < WATCH_BUCKETS; i++)
        free(p->buckets[i].entries);
    free(p->heap);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->wake);
    free(p);
}

static bool watch_add(struct watch_list *wl, struct delayed_op *op, uintptr_t key)
{
    if (wl->count == wl->cap) {
        int cap = wl->cap ? wl->cap * 2 : 8;
        struct watch_entry *entries = realloc(wl->entries, (size_t)cap * sizeof *entries);
        if (!entries)
            return false;
        wl->entries = entries;
        wl->cap = cap;
    }
    wl->entries[wl->count].op = op;
    wl->entries[wl->count].key = key;
    wl->count++;
    return true;
}

void purgatory_add(struct purgatory *p, struct delayed_op *op)
{
    pthread_mutex_init(&op->lock, NULL);
    op->done = false;
    op->refs = 1;
    op->heap_index = -1;
    unique_keys(op);

    /* Park first, then try: a notify that lands between the try and the
     * park would otherwise be lost. */
    pthread_mutex_lock(&p->lock);
    bool parked = true;
    if (p->heap_len == p->heap_cap) {
        int64_t cap = p->heap_cap ? p->heap_cap * 2 : 64;
        struct delayed_op **heap = realloc(p->heap, (size_t)cap * sizeof *heap);
        if (heap) {
            p->heap = heap;
            p->heap_cap = cap;
        } else {
            parked = false;
        }
    }
    for (int k = 0; parked && k < op->watch_key_count; k++) {
        if (!watch_add(&p->buckets[bucket_of(op->watch_keys[k])], op, op->watch_keys[k])) {
            /* Undo the watches added so far and answer now instead. */
            logger_warn("purgatory", "%s: out of memory adding a watch", p->name);
            int all = op->watch_key_count;
            op->watch_key_count = k;
            watch_remove(p, op);
            op->watch_key_count = all;
            parked = false;
        }
    }
    if (parked) {
        if (p->draining)
            op->deadline_mono_ms = clock_mono_ms();
        op->heap_index = p->heap_len;
        p->heap[p->heap_len++] = op;
        metrics_set(p->waiting, p->heap_len);
        heap_up(p, op->heap_index);
        op->refs++; /* our reference while attempting */
        pthread_cond_signal(&p->wake);
    }
    pthread_mutex_unlock(&p->lock);

    if (!parked) {
        /* No memory to wait: answer now with what there is. */
        pthread_mutex_lock(&op->lock);
        op->try_complete(op, true);
        op->done = true;
        pthread_mutex_unlock(&op->lock);
        pthread_mutex_lock(&p->lock);
        op_unref_locked(p, op);
        pthread_mutex_unlock(&p->lock);
        return;
    }
    op_attempt(p, op, false);
    pthread_mutex_lock(&p->lock);
    op_unref_locked(p, op);
    pthread_mutex_unlock(&p->lock);
}

void purgatory_expire_now(struct purgatory *p, struct delayed_op *op)
{
    pthread_mutex_lock(&p->lock);
    int64_t i = op->heap_index;
    if (i >= 0 && i < p->heap_len && p->heap[i] == op) {
        op->deadline_mono_ms = clock_mono_ms();
        heap_up(p, i);
        pthread_cond_signal(&p->wake);
    }
    pthread_mutex_unlock(&p->lock);
}

void purgatory_expire_all(struct purgatory *p)
{
    if (!p)
        return;
    int64_t now = clock_mono_ms();
    pthread_mutex_lock(&p->lock);
    p->draining = true;
    /* Every deadline equal: still a valid min-heap. */
    for (int64_t i = 0; i < p->heap_len; i++)
        if (p->heap[i]->deadline_mono_ms > now)
            p->heap[i]->deadline_mono_ms = now;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->lock);
}

void purgatory_notify(struct purgatory *p, uintptr_t key)
{
    struct delayed_op *local[64];
    struct delayed_op **ops = local;
    int n = 0;
    pthread_mutex_lock(&p->lock);
    struct watch_list *wl = &p->buckets[bucket_of(key)];
    if (wl->count > 64) {
        ops = malloc((size_t)wl->count * sizeof *ops);
        if (!ops) {
            pthread_mutex_unlock(&p->lock);
            return; /* the waiters still expire on time */
        }
    }
    for (int i = 0; i < wl->count; i++) {
        if (wl->entries[i].key != key)
            continue;
        struct delayed_op *op = wl->entries[i].op;
        op->refs++;
        ops[n++] = op;
    }
    pthread_mutex_unlock(&p->lock);

    for (int i = 0; i < n; i++)
        op_attempt(p, ops[i], false);

    pthread_mutex_lock(&p->lock);
    for (int i = 0; i < n; i++)
        op_unref_locked(p, ops[i]);
    pthread_mutex_unlock(&p->lock);
    if (ops != local)
        free(ops);
}

int purgatory_waiting(struct purgatory *p)
{
    pthread_mutex_lock(&p->lock);
    int n = (int)p->heap_len;
    pthread_mutex_unlock(&p->lock);
    return n;
}
