/* Reader/writer primitives: varint edge values, compact and nullable
 * strings, array counts against remaining bytes, arena and splices. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "protocol/messages.h"

static void test_varlong_edges(void **state)
{
    (void)state;
    const int64_t values[] = {0, -1, 1, 63, -64, 64, INT32_MIN, INT32_MAX, INT64_MIN, INT64_MAX};
    /* Zigzag sizes: 0,-1,1,63,-64 take one byte; 64 takes two; extremes take 5 and 10. */
    const size_t sizes[] = {1, 1, 1, 1, 1, 2, 5, 5, 10, 10};
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        struct kafka_writer w;
        kafka_writer_init(&w, 1);
        kafka_write_varlong(&w, values[i]);
        assert_int_equal(w.len, sizes[i]);
        assert_int_equal(kafka_varlong_size(values[i]), sizes[i]);
        struct kafka_reader r;
        kafka_reader_init(&r, w.buf, w.len);
        assert_true(kafka_read_varlong(&r) == values[i]);
        assert_false(r.failed);
        assert_int_equal(r.pos, w.len);
        kafka_writer_free(&w);
    }
    /* Known encodings: -1 -> 0x01, 1 -> 0x02, 64 -> 0x80 0x01. */
    struct kafka_writer w;
    kafka_writer_init(&w, 1);
    kafka_write_varint(&w, -1);
    kafka_write_varint(&w, 1);
    kafka_write_varint(&w, 64);
    const uint8_t expect[] = {0x01, 0x02, 0x80, 0x01};
    assert_int_equal(w.len, sizeof(expect));
    assert_memory_equal(w.buf, expect, sizeof(expect));
    kafka_writer_free(&w);
}

static void test_varint_edges(void **state)
{
    (void)state;
    const int32_t values[] = {0, -1, INT32_MIN, INT32_MAX};
    for (size_t i = 0; i < 4; i++) {
        struct kafka_writer w;
        kafka_writer_init(&w, 1);
        kafka_write_varint(&w, values[i]);
        assert_int_equal(w.len, kafka_varint_size(values[i]));
        struct kafka_reader r;
        kafka_reader_init(&r, w.buf, w.len);
        assert_int_equal(kafka_read_varint(&r), values[i]);
        assert_false(r.failed);
        kafka_writer_free(&w);
    }
    /* Unsigned varint of UINT32_MAX is 5 bytes; a 6th continuation byte is invalid. */
    struct kafka_writer w;
    kafka_writer_init(&w, 1);
    kafka_write_uvarint(&w, UINT32_MAX);
    assert_int_equal(w.len, 5);
    kafka_writer_free(&w);
    const uint8_t too_long[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    struct kafka_reader r;
    kafka_reader_init(&r, too_long, sizeof(too_long));
    kafka_read_uvarint(&r);
    assert_true(r.failed);
    /* Truncated varint fails. */
    const uint8_t truncated[] = {0x80};
    kafka_reader_init(&r, truncated, 1);
    kafka_read_varint(&r);
    assert_true(r.failed);
}

static void test_compact_strings_null_vs_empty(void **state)
{
    (void)state;
    struct kafka_writer w;
    kafka_writer_init(&w, 4);
    struct kafka_str null_str = {NULL, -1};
    kafka_write_compact_string(&w, null_str);                  /* 0x00 */
    kafka_write_compact_string(&w, kafka_str_from_cstr(""));   /* 0x01 */
    kafka_write_compact_string(&w, kafka_str_from_cstr("ab")); /* 0x03 'a' 'b' */
    kafka_write_string(&w, null_str);                          /* 0xff 0xff */
    kafka_write_string(&w, kafka_str_from_cstr(""));           /* 0x00 0x00 */
    const uint8_t expect[] = {0x00, 0x01, 0x03, 'a', 'b', 0xff, 0xff, 0x00, 0x00};
    assert_int_equal(w.len, sizeof(expect));
    assert_memory_equal(w.buf, expect, sizeof(expect));

    struct kafka_reader r;
    kafka_reader_init(&r, w.buf, w.len);
    struct kafka_str s = kafka_read_compact_nullable_string(&r);
    assert_int_equal(s.len, -1);
    s = kafka_read_compact_string(&r);
    assert_int_equal(s.len, 0);
    assert_non_null(s.data);
    s = kafka_read_compact_string(&r);
    assert_true(kafka_str_eq_cstr(s, "ab"));
    s = kafka_read_nullable_string(&r);
    assert_int_equal(s.len, -1);
    s = kafka_read_string(&r);
    assert_int_equal(s.len, 0);
    assert_false(r.failed);
    assert_int_equal(r.pos, w.len);

    /* A null where the field is not nullable is an error. */
    kafka_reader_init(&r, w.buf, w.len);
    kafka_read_compact_string(&r);
    assert_true(r.failed);
    assert_non_null(strstr(r.error, "null"));
    kafka_writer_free(&w);

    char buf[4];
    assert_string_equal(kafka_str_to_cstr(kafka_str_from_cstr("hello"), buf, sizeof(buf)), "hel");
    assert_string_equal(kafka_str_to_cstr(null_str, buf, sizeof(buf)), "");
    assert_true(kafka_str_eq_cstr(null_str, NULL));
    assert_false(kafka_str_eq_cstr(kafka_str_from_cstr(""), NULL));
}

static void test_string_length_beyond_buffer(void **state)
{
    (void)state;
    const uint8_t data[] = {0x00, 0x05, 'a', 'b'};
    struct kafka_reader r;
    kafka_reader_init(&r, data, sizeof(data));
    kafka_read_string(&r);
    assert_true(r.failed);
    /* Later reads keep returning zero values. */
    assert_int_equal(kafka_read_int32(&r), 0);
}

static void test_array_count_checked_against_remaining(void **state)
{
    (void)state;
    /* Claims 1,000,000 int32 elements with 8 bytes left. */
    const uint8_t data[] = {0x00, 0x0f, 0x42, 0x40, 1, 2, 3, 4, 5, 6, 7, 8};
    struct kafka_reader r;
    kafka_reader_init(&r, data, sizeof(data));
    kafka_read_array_len(&r, 4);
    assert_true(r.failed);
    /* Two int32 elements fit. */
    const uint8_t ok[] = {0x00, 0x00, 0x00, 0x02, 1, 2, 3, 4, 5, 6, 7, 8};
    kafka_reader_init(&r, ok, sizeof(ok));
    assert_int_equal(kafka_read_array_len(&r, 4), 2);
    /* Compact null array. */
    const uint8_t null_compact[] = {0x00};
    kafka_reader_init(&r, null_compact, 1);
    assert_int_equal(kafka_read_compact_array_len(&r, 1), -1);
    assert_false(r.failed);
}

/* A hostile request with a huge array count must fail without allocating. */
static void test_hostile_metadata_request(void **state)
{
    (void)state;
    const uint8_t body[] = {0x7f, 0xff, 0xff, 0xff, 0x00};
    struct kafka_arena arena;
    kafka_arena_init(&arena);
    struct metadata_request mr;
    struct kafka_reader r;
    kafka_reader_init(&r, body, sizeof(body));
    assert_int_equal(metadata_request_decode(&mr, &r, 1, &arena), -1);
    assert_non_null(strstr(r.error, "Topics"));
    assert_true(arena.used_total == 0);
    kafka_arena_free(&arena);
}

/* Sizes just past a small block, between blocks and mixed with tiny ones:
 * the malloc'd bytes stay under 2 * used + 64 KiB and one header per block. */
static void test_arena_slack_is_bounded(void **state)
{
    (void)state;
    static const size_t sizes[] = {4097, 1, 16385, 3000, 24, 65537, 1023, 4096};
    struct kafka_arena a;
    kafka_arena_init(&a);
    for (int i = 0; i < 4000; i++) {
        assert_non_null(kafka_arena_alloc(&a, sizes[i % 8]));
        size_t hw = kafka_arena_high_water(&a);
        assert_true(hw <= 2 * a.used_total + 65536 + 64 * (size_t)(i + 1) / 16 + 128);
    }
    size_t before = kafka_arena_high_water(&a);
    assert_true(before >= a.used_total);
    kafka_arena_free(&a);
    assert_int_equal(kafka_arena_high_water(&a), 0);
}

/* Two levels of arrays: the inner count may not claim the bytes the outer
 * array's later elements need. */
static void test_array_count_leaves_reserved_bytes(void **state)
{
    (void)state;
    uint8_t buf[64] = {0, 0, 0, 10};
    struct kafka_reader r;
    kafka_reader_init(&r, buf, sizeof(buf));
    assert_int_equal(kafka_read_array_len(&r, 4), 10);
    r.reserved = 9 * 4; /* elements 1..9 */
    struct kafka_reader copy = r;
    assert_int_equal(kafka_read_array_len(&r, 1), 0); /* count 0 fits */
    buf[7] = 25;
    r = copy;
    assert_int_equal(kafka_read_array_len(&r, 1), 0); /* 25 > 60 - 36 - 4 */
    assert_true(r.failed);
}

static void test_arena_alignment_and_zeroing(void **state)
{
    (void)state;
    struct kafka_arena a;
    kafka_arena_init(&a);
    for (int i = 1; i < 200; i++) {
        uint8_t *p = kafka_arena_alloc(&a, (size_t)i * 7);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % 16, 0);
        for (int j = 0; j < i * 7; j++)
            assert_int_equal(p[j], 0);
        memset(p, 0xab, (size_t)i * 7);
    }
    assert_non_null(kafka_arena_alloc(&a, 1 << 20));
    assert_null(kafka_arena_alloc(&a, SIZE_MAX - 4));
    struct kafka_str s = kafka_arena_strdup(&a, "topic");
    assert_true(kafka_str_eq_cstr(s, "topic"));
    kafka_arena_free(&a);
    kafka_arena_free(&a); /* freeing twice is harmless */
}

static void test_writer_splice_and_flatten(void **state)
{
    (void)state;
    char path[] = "/tmp/cairn-wire-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    assert_int_equal(write(fd, "0123456789", 10), 10);

    struct kafka_writer w;
    kafka_writer_init(&w, 2);
    size_t at = kafka_writer_reserve(&w, 4);
    kafka_write_int8(&w, 7);
    struct kafka_records rec = kafka_records_from_file(fd, 2, 5); /* "23456" */
    kafka_write_records(&w, &rec);
    kafka_write_int8(&w, 9);
    kafka_writer_patch_int32(&w, at, 42);
    assert_int_equal(w.splice_count, 1);
    assert_int_equal(kafka_writer_total_len(&w), 4 + 1 + 4 + 5 + 1);
    assert_int_equal(w.splices[0].at, 9);
    assert_int_equal(kafka_writer_flatten(&w), 0);
    const uint8_t expect[] = {0, 0, 0, 42, 7, 0, 0, 0, 5, '2', '3', '4', '5', '6', 9};
    assert_int_equal(w.len, sizeof(expect));
    assert_memory_equal(w.buf, expect, sizeof(expect));
    kafka_writer_free(&w); /* fd already closed by flatten */
}

static void test_error_names(void **state)
{
    (void)state;
    assert_string_equal(kafka_error_name(KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION), "UNKNOWN_TOPIC_OR_PARTITION");
    assert_string_equal(kafka_error_name(-200), "UNKNOWN_ERROR_CODE");
    assert_true(kafka_error_retriable(KAFKA_ERR_NOT_LEADER_OR_FOLLOWER));
    assert_false(kafka_error_retriable(KAFKA_ERR_NONE));
}

static void test_api_table(void **state)
{
    (void)state;
    const struct kafka_api_desc *d = kafka_api_lookup(0);
    assert_non_null(d);
    assert_string_equal(d->name, "Produce");
    assert_int_equal(d->flexible_min, 9);
    assert_int_equal(d->request_size_of, sizeof(struct produce_request));
    assert_null(kafka_api_lookup(-1));
    assert_null(kafka_api_lookup(1000));
    assert_int_equal(kafka_request_header_version(7, 0), 0);
    assert_int_equal(kafka_request_header_version(3, 8), 1);
    assert_int_equal(kafka_request_header_version(3, 9), 2);
    assert_int_equal(kafka_response_header_version(18, 3), 0);
    assert_int_equal(kafka_response_header_version(3, 9), 1);
    assert_int_equal(kafka_response_header_version(17, 1), 0); /* SaslHandshake never flexible */
    int unstable = 0;
    for (int i = 0; i < kafka_api_count(); i++)
        unstable += kafka_api_at(i)->latest_unstable;
    assert_true(unstable > 0);
    assert_int_equal(kafka_api_lookup(26)->latest_unstable, true);
    const struct kafka_record_desc *rd = kafka_metadata_record_lookup(2);
    assert_non_null(rd);
    assert_string_equal(rd->name, "TopicRecord");
    assert_null(kafka_metadata_record_lookup(6));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_varlong_edges),
        cmocka_unit_test(test_varint_edges),
        cmocka_unit_test(test_compact_strings_null_vs_empty),
        cmocka_unit_test(test_string_length_beyond_buffer),
        cmocka_unit_test(test_array_count_checked_against_remaining),
        cmocka_unit_test(test_hostile_metadata_request),
        cmocka_unit_test(test_arena_alignment_and_zeroing),
        cmocka_unit_test(test_arena_slack_is_bounded),
        cmocka_unit_test(test_array_count_leaves_reserved_bytes),
        cmocka_unit_test(test_writer_splice_and_flatten),
        cmocka_unit_test(test_error_names),
        cmocka_unit_test(test_api_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
