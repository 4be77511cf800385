/* String-keyed pointer index (see group_index.h). */
#include "group/group_index.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "util/hash.h"

static const char *key_of(const struct group_index *ix, const void *p)
{
    const char *k;
    memcpy(&k, (const char *)p + ix->key_offset, sizeof k);
    return k;
}

static uint64_t key_hash(const struct group_index *ix, const char *key)
{
    return hash_finish(hash_fold_bytes(HASH_FNV_OFFSET ^ ix->seed, key, strlen(key)));
}

void group_index_init(struct group_index *ix, size_t key_offset, uint64_t seed)
{
    memset(ix, 0, sizeof *ix);
    ix->key_offset = key_offset;
    ix->seed = seed;
}

void group_index_free(struct group_index *ix)
{
    free(ix->slots);
    free(ix->hashes);
    ix->slots = NULL;
    ix->hashes = NULL;
    ix->cap = ix->count = 0;
}

void *group_index_find(const struct group_index *ix, const char *key)
{
    if (ix->count == 0 || !key)
        return NULL;
    uint64_t h = key_hash(ix, key);
    size_t mask = ix->cap - 1;
    for (size_t i = (size_t)h & mask; ix->slots[i]; i = (i + 1) & mask)
        if (ix->hashes[i] == h && strcmp(key_of(ix, ix->slots[i]), key) == 0)
            return ix->slots[i];
    return NULL;
}

static void place(void **slots, uint64_t *hashes, size_t mask, void *p, uint64_t h)
{
    size_t i = (size_t)h & mask;
    while (slots[i])
        i = (i + 1) & mask;
    slots[i] = p;
    hashes[i] = h;
}

static int grow(struct group_index *ix)
{
    size_t cap = ix->cap ? ix->cap * 2 : 8;
    void **slots = calloc(cap, sizeof *slots);
    uint64_t *hashes = calloc(cap, sizeof *hashes);
    if (!slots || !hashes) {
        free(slots);
        free(hashes);
        return -1;
    }
    for (size_t i = 0; i < ix->cap; i++)
        if (ix->slots[i])
            place(slots, hashes, cap - 1, ix->slots[i], ix->hashes[i]);
    free(ix->slots);
    free(ix->hashes);
    ix->slots = slots;
    ix->hashes = hashes;
    ix->cap = cap;
    return 0;
}

int group_index_put(struct group_index *ix, void *p)
{
    if ((ix->count + 1) * 2 > ix->cap && grow(ix) != 0)
        return -1;
    place(ix->slots, ix->hashes, ix->cap - 1, p, key_hash(ix, key_of(ix, p)));
    ix->count++;
    return 0;
}

void group_index_del(struct group_index *ix, const void *p)
{
    group_index_del_at_key(ix, p, key_of(ix, p));
}

void group_index_del_at_key(struct group_index *ix, const void *p, const char *key)
{
    if (ix->count == 0 || !key)
        return;
    size_t mask = ix->cap - 1;
    uint64_t h = key_hash(ix, key);
    size_t i = (size_t)h & mask;
    while (ix->slots[i] && (ix->slots[i] != p || ix->hashes[i] != h))
        i = (i + 1) & mask;
    if (!ix->slots[i])
        return;
    /* Backward shift: entries after the hole whose probe run passes over
     * it move up, so lookups never need tombstones. */
    for (size_t j = (i + 1) & mask; ix->slots[j]; j = (j + 1) & mask) {
        size_t home = (size_t)ix->hashes[j] & mask;
        if (((j - home) & mask) >= ((j - i) & mask)) {
            ix->slots[i] = ix->slots[j];
            ix->hashes[i] = ix->hashes[j];
            i = j;
        }
    }
    ix->slots[i] = NULL;
    ix->count--;
}

uint64_t group_index_random_seed(void)
{
    uint64_t seed = 0;
    for (;;) {
        ssize_t n = getrandom(&seed, sizeof seed, GRND_NONBLOCK);
        if (n == (ssize_t)sizeof seed)
            return seed;
        if (n < 0 && errno == EINTR)
            continue;
        break;
    }
    /* No entropy yet (early boot): still differs per process and start. */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return hash_finish((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)(uintptr_t)&seed);
}
