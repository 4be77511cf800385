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

#include "roundtrip_cases.h"

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
    void *m = roundtrip_case_fill(tc, version, seed, &arena);
    assert_non_null(m);

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
