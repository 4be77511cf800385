/* Round trip of every generated message at every valid version: fill every
 * field the version carries with pseudo-random values, encode, check the
 * size function, decode, re-encode and compare bytes; then check that every
 * strict prefix of the encoding fails to decode cleanly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

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

#define SEEDS_PER_VERSION 6

static void check_prefixes_fail(const struct roundtrip_case *tc, int16_t version, const uint8_t *data, size_t len)
{
    for (size_t cut = 0; cut < len; cut++) {
        /* An exact-size copy lets ASan catch any read past the prefix. */
        uint8_t *copy = malloc(cut ? cut : 1);
        assert_non_null(copy);
        memcpy(copy, data, cut);
        struct kafka_arena arena;
        kafka_arena_init(&arena);
        void *m = kafka_arena_alloc(&arena, tc->size_of);
        assert_non_null(m);
        struct kafka_reader r;
        kafka_reader_init(&r, copy, cut);
        int rc = tc->decode(m, &r, version, &arena);
        if (rc == 0)
            fail_msg("%s v%d: prefix %zu of %zu decoded", tc->name, version, cut, len);
        assert_true(r.failed);
        assert_true(r.error[0] != '\0');
        kafka_arena_free(&arena);
        free(copy);
    }
}

static size_t roundtrip_one(const struct roundtrip_case *tc, int16_t version, uint64_t seed)
{
    struct kafka_arena arena;
    kafka_arena_init(&arena);
    struct fill_ctx ctx = {seed, &arena};
    void *m = kafka_arena_alloc(&arena, tc->size_of);
    assert_non_null(m);
    tc->fill(m, version, &ctx);

    struct kafka_writer w;
    assert_int_equal(kafka_writer_init(&w, 16), 0);
    if (tc->encode(m, &w, version) != 0)
        fail_msg("%s v%d seed %llu: encode failed", tc->name, version, (unsigned long long)seed);
    size_t expect = tc->size(m, version);
    if (expect != w.len)
        fail_msg("%s v%d: size() %zu but wrote %zu", tc->name, version, expect, w.len);

    struct kafka_arena arena2;
    kafka_arena_init(&arena2);
    void *m2 = kafka_arena_alloc(&arena2, tc->size_of);
    assert_non_null(m2);
    struct kafka_reader r;
    kafka_reader_init(&r, w.buf, w.len);
    if (tc->decode(m2, &r, version, &arena2) != 0)
        fail_msg("%s v%d: decode failed: %s", tc->name, version, r.error);
    assert_int_equal(r.pos, w.len);

    struct kafka_writer w2;
    assert_int_equal(kafka_writer_init(&w2, 16), 0);
    assert_int_equal(tc->encode(m2, &w2, version), 0);
    assert_int_equal(w2.len, w.len);
    if (memcmp(w.buf, w2.buf, w.len) != 0)
        fail_msg("%s v%d: re-encoded bytes differ", tc->name, version);
    assert_int_equal(tc->size(m2, version), w.len);

    check_prefixes_fail(tc, version, w.buf, w.len);

    size_t len = w.len;
    kafka_writer_free(&w2);
    kafka_writer_free(&w);
    kafka_arena_free(&arena2);
    kafka_arena_free(&arena);
    return len;
}

static void test_roundtrip_all_messages(void **state)
{
    (void)state;
    size_t ncases = sizeof(roundtrip_cases) / sizeof(roundtrip_cases[0]);
    size_t total_versions = 0, total_bytes = 0, nonempty = 0;
    for (size_t i = 0; i < ncases; i++) {
        const struct roundtrip_case *tc = &roundtrip_cases[i];
        for (int16_t v = tc->min_version; v <= tc->max_version; v++) {
            for (uint64_t s = 0; s < SEEDS_PER_VERSION; s++) {
                size_t n = roundtrip_one(tc, v, (uint64_t)i * 1000003u + (uint64_t)v * 7919u + s);
                total_bytes += n;
                nonempty += n > 0;
            }
            total_versions++;
        }
    }
    /* Every schema must be covered, and real content must have been encoded. */
    assert_true(ncases >= 200);
    assert_true(total_versions > ncases);
    assert_true(nonempty > total_versions);
    printf("round trip: %zu schemas, %zu schema versions, %zu bytes encoded\n", ncases, total_versions, total_bytes);
}

/* A field the version cannot carry must make encode fail unless ignorable. */
static void test_encode_rejects_unsupported_field(void **state)
{
    (void)state;
    struct produce_request req;
    produce_request_init(&req);
    req.transactional_id = kafka_str_from_cstr("txn-1");
    struct kafka_writer w;
    kafka_writer_init(&w, 64);
    assert_int_equal(produce_request_encode(&req, &w, 2), -1); /* TransactionalId is v3+ */
    kafka_writer_free(&w);
    kafka_writer_init(&w, 64);
    assert_int_equal(produce_request_encode(&req, &w, 3), 0);
    kafka_writer_free(&w);
}

/* A null in a non-nullable field is an encode error, not a null on the wire. */
static void test_encode_rejects_null_in_non_nullable(void **state)
{
    (void)state;
    struct metadata_request_metadata_request_topic topic;
    metadata_request_metadata_request_topic_init(&topic);
    struct metadata_request req;
    metadata_request_init(&req);
    req.topics = &topic;
    req.topics_count = 1;
    topic.name.data = NULL;
    topic.name.len = -1; /* Name is nullable only from v10 */
    struct kafka_writer w;
    kafka_writer_init(&w, 64);
    assert_int_equal(metadata_request_encode(&req, &w, 9), -1);
    kafka_writer_free(&w);
    kafka_writer_init(&w, 64);
    assert_int_equal(metadata_request_encode(&req, &w, 10), 0);
    kafka_writer_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_all_messages),
        cmocka_unit_test(test_encode_rejects_unsupported_field),
        cmocka_unit_test(test_encode_rejects_null_in_non_nullable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
