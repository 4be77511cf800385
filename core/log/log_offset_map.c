#include "log/log_offset_map.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define LOG_OFFSET_MAP_MIN_SLOTS 16

/* 64-bit finaliser (the MurmurHash3 fmix64 constants). */
static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* Two hashes with unrelated seeds and multipliers: a false "same key" needs
 * both 64-bit halves to collide. */
static void key_hash(const uint8_t *key, size_t len, uint64_t *hi, uint64_t *lo)
{
    uint64_t a = 0x9e3779b97f4a7c15ULL ^ (uint64_t)len;
    uint64_t b = 0x6a09e667f3bcc909ULL + (uint64_t)len * 0xbf58476d1ce4e5b9ULL;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, key + i, 8);
        a = mix64(a ^ w) * 0x94d049bb133111ebULL;
        b = mix64(b + (w * 0x2545f4914f6cdd1dULL)) ^ (b >> 29);
    }
    uint64_t tail = 0;
    for (size_t k = 0; i < len; i++, k++)
        tail |= (uint64_t)key[i] << (8 * k);
    *hi = mix64(a ^ tail ^ 0xd6e8feb86659fd93ULL);
    *lo = mix64(b + tail * 0x9fb21c651e98df25ULL + 1);
}

static struct log_offset_map_slot *alloc_slots(size_t cap)
{
    struct log_offset_map_slot *s = malloc(cap * sizeof *s);
    if (s)
        for (size_t i = 0; i < cap; i++)
            s[i].offset = -1;
    return s;
}

int log_offset_map_init(struct log_offset_map *m, size_t max_bytes, double load_factor)
{
    memset(m, 0, sizeof *m);
    size_t max_slots = max_bytes / LOG_OFFSET_MAP_SLOT_BYTES;
    size_t max_cap = LOG_OFFSET_MAP_MIN_SLOTS;
    while (max_cap <= max_slots / 2)
        max_cap *= 2;
    m->max_cap = max_cap;
    m->cap = max_cap < 1024 ? max_cap : 1024;
    /* Below 1 so a probe for a missing key always meets an empty slot. */
    m->load_factor = load_factor > 0.0 && load_factor <= 0.95 ? load_factor : 0.9;
    m->slots = alloc_slots(m->cap);
    return m->slots ? 0 : ENOMEM;
}

void log_offset_map_free(struct log_offset_map *m)
{
    free(m->slots);
    memset(m, 0, sizeof *m);
}

static size_t limit(size_t cap, double load_factor)
{
    size_t n = (size_t)((double)cap * load_factor);
    return n == 0 ? 1 : n;
}

size_t log_offset_map_capacity(const struct log_offset_map *m)
{
    return limit(m->max_cap, m->load_factor);
}

static struct log_offset_map_slot *probe(struct log_offset_map_slot *slots, size_t cap, uint64_t hi, uint64_t lo)
{
    size_t i = (size_t)lo & (cap - 1);
    while (slots[i].offset >= 0 && !(slots[i].hash_hi == hi && slots[i].hash_lo == lo))
        i = (i + 1) & (cap - 1);
    return &slots[i];
}

static int grow(struct log_offset_map *m)
{
    size_t cap = m->cap * 2;
    struct log_offset_map_slot *slots = alloc_slots(cap);
    if (!slots)
        return ENOMEM;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].offset >= 0)
            *probe(slots, cap, m->slots[i].hash_hi, m->slots[i].hash_lo) = m->slots[i];
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return 0;
}

int log_offset_map_put(struct log_offset_map *m, const uint8_t *key, size_t key_len, int64_t offset)
{
    uint64_t hi, lo;
    key_hash(key, key_len, &hi, &lo);
    struct log_offset_map_slot *s = probe(m->slots, m->cap, hi, lo);
    if (s->offset >= 0) {
        if (offset > s->offset)
            s->offset = offset;
        return 0;
    }
    /* Grow early (at 3/4) below the cap so probes stay short. */
    while (m->cap < m->max_cap && m->count + 1 > m->cap / 4 * 3) {
        if (grow(m) != 0)
            return ENOMEM;
        s = probe(m->slots, m->cap, hi, lo);
    }
    if (m->count + 1 > limit(m->cap, m->load_factor))
        return 1;
    s->hash_hi = hi;
    s->hash_lo = lo;
    s->offset = offset;
    m->count++;
    return 0;
}

int64_t log_offset_map_get(const struct log_offset_map *m, const uint8_t *key, size_t key_len)
{
    uint64_t hi, lo;
    key_hash(key, key_len, &hi, &lo);
    return probe(m->slots, m->cap, hi, lo)->offset;
}
