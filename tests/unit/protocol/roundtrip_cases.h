/* The generated fill functions and the table of every generated message
 * (roundtrip_fill.inc), with the value source they draw from. Included by
 * the protocol tests that build valid messages of every schema. */
#ifndef CAIRN_TESTS_PROTOCOL_ROUNDTRIP_CASES_H
#define CAIRN_TESTS_PROTOCOL_ROUNDTRIP_CASES_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "protocol/messages.h"

/* Deterministic value source for the generated fill functions. */
struct fill_ctx {
    uint64_t state;
    struct kafka_arena *arena;
};

static uint64_t fill_u64(struct fill_ctx *c)
{
    /* splitmix64 */
    uint64_t z = (c->state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static bool fill_chance(struct fill_ctx *c, unsigned one_in)
{
    return fill_u64(c) % one_in == 0;
}

static double fill_double(struct fill_ctx *c)
{
    return (double)(int32_t)fill_u64(c) / 8.0;
}

static struct kafka_uuid fill_uuid(struct fill_ctx *c)
{
    struct kafka_uuid u;
    uint64_t a = fill_u64(c), b = fill_u64(c);
    memcpy(u.bytes, &a, 8);
    memcpy(u.bytes + 8, &b, 8);
    return u;
}

static struct kafka_str fill_str(struct fill_ctx *c)
{
    char tmp[16];
    size_t n = fill_u64(c) % 12;
    for (size_t i = 0; i < n; i++)
        tmp[i] = (char)('a' + fill_u64(c) % 26);
    tmp[n] = '\0';
    return kafka_arena_strdup(c->arena, tmp);
}

static struct kafka_bytes fill_bytes(struct fill_ctx *c)
{
    int32_t n = (int32_t)(fill_u64(c) % 20);
    uint8_t *p = kafka_arena_alloc(c->arena, (size_t)n + 1);
    for (int32_t i = 0; p && i < n; i++)
        p[i] = (uint8_t)fill_u64(c);
    struct kafka_bytes b = {p, p ? n : 0};
    return b;
}

static struct kafka_records fill_records(struct fill_ctx *c)
{
    struct kafka_bytes b = fill_bytes(c);
    return kafka_records_from_memory(b.data, b.len);
}

static struct kafka_str fill_null_str(void)
{
    struct kafka_str s = {NULL, -1};
    return s;
}

static struct kafka_bytes fill_null_bytes(void)
{
    struct kafka_bytes b = {NULL, -1};
    return b;
}

static struct kafka_records fill_null_records(void)
{
    return kafka_records_from_memory(NULL, -1);
}

struct roundtrip_case {
    const char *name;
    int16_t min_version, max_version;
    size_t size_of;
    void (*fill)(void *m, int16_t version, struct fill_ctx *c);
    int (*decode)(void *m, struct kafka_reader *r, int16_t version, struct kafka_arena *a);
    int (*encode)(const void *m, struct kafka_writer *w, int16_t version);
    size_t (*size)(const void *m, int16_t version);
};

#include "roundtrip_fill.inc"

/* A message of tc filled from seed, allocated in arena. */
static inline void *roundtrip_case_fill(const struct roundtrip_case *tc, int16_t version, uint64_t seed,
                                        struct kafka_arena *arena)
{
    struct fill_ctx ctx = {seed, arena};
    void *m = kafka_arena_alloc(arena, tc->size_of);
    if (m)
        tc->fill(m, version, &ctx);
    return m;
}

#endif
