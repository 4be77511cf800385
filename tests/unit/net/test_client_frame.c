/* Outbound client framing: request frames decode back as the broker reads
 * them, response headers are checked against the correlation id, the frame
 * reader reassembles split and back-to-back frames and refuses oversized
 * ones, and version choice, backoff and the ApiVersions fallback follow
 * Kafka's client rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "net/client_frame.h"
#include "protocol/generated/metadata_request.h"
#include "protocol/generated/request_header.h"

#define METADATA_KEY 3
#define API_VERSIONS_KEY 18

static int32_t be32(const uint8_t *p)
{
    return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3]);
}

/* Encodes Metadata at version, then decodes it the way dispatch does. */
static void check_metadata_round_trip(int16_t version, int16_t expect_header_version)
{
    const struct kafka_api_desc *d = kafka_api_lookup(METADATA_KEY);
    struct metadata_request_metadata_request_topic topic;
    metadata_request_metadata_request_topic_init(&topic);
    topic.name = kafka_str_from_cstr("orders");
    struct metadata_request req;
    metadata_request_init(&req);
    req.topics = &topic;
    req.topics_count = 1;
    struct kafka_writer w;
    assert_int_equal(client_frame_encode_request(&w, d, version, 77, "replica-7", NULL, &req), 0);
    assert_int_equal(be32(w.buf), (int32_t)(w.len - 4));
    assert_int_equal(kafka_request_header_version(METADATA_KEY, version), expect_header_version);

    struct kafka_arena arena;
    kafka_arena_init(&arena);
    struct kafka_reader r;
    kafka_reader_init(&r, w.buf + 4, w.len - 4);
    struct request_header h;
    assert_int_equal(request_header_decode(&h, &r, expect_header_version, &arena), 0);
    assert_int_equal(h.request_api_key, METADATA_KEY);
    assert_int_equal(h.request_api_version, version);
    assert_int_equal(h.correlation_id, 77);
    assert_true(kafka_str_eq_cstr(h.client_id, "replica-7"));
    struct metadata_request back;
    assert_int_equal(metadata_request_decode(&back, &r, version, &arena), 0);
    assert_int_equal(kafka_reader_remaining(&r), 0);
    assert_int_equal(back.topics_count, 1);
    assert_true(kafka_str_eq_cstr(back.topics[0].name, "orders"));
    kafka_arena_free(&arena);
    kafka_writer_free(&w);
}

static void test_request_frame_headers_v1_and_v2(void **state)
{
    (void)state;
    check_metadata_round_trip(1, 1);
    check_metadata_round_trip(12, 2);
}

static int failing_encode(struct kafka_writer *w, int16_t version, void *ctx)
{
    (void)w;
    (void)version;
    (void)ctx;
    return -1;
}

static void test_failed_body_encode_frees_the_writer(void **state)
{
    (void)state;
    struct kafka_writer w;
    assert_int_equal(client_frame_encode_request(&w, kafka_api_lookup(METADATA_KEY), 1, 1, "c", failing_encode, NULL),
                     -1);
}

static void test_response_header_and_correlation(void **state)
{
    (void)state;
    /* Metadata v12 answers with header v1: correlation id, then tagged fields. */
    uint8_t flexible[] = {0, 0, 0, 9, 0, 0xAB};
    char err[160];
    assert_int_equal(client_frame_response_body(flexible, sizeof flexible, METADATA_KEY, 12, 9, err, sizeof err), 5);
    assert_int_equal(client_frame_response_body(flexible, sizeof flexible, METADATA_KEY, 1, 9, err, sizeof err), 4);
    assert_int_equal(client_frame_response_body(flexible, sizeof flexible, METADATA_KEY, 12, 10, err, sizeof err), -1);
    assert_non_null(strstr(err, "correlation id 9, expected 10"));
    /* ApiVersions keeps header v0 even at its flexible v3. */
    assert_int_equal(client_frame_response_body(flexible, sizeof flexible, API_VERSIONS_KEY, 3, 9, err, sizeof err), 4);
    uint8_t short_frame[] = {0, 0};
    assert_int_equal(client_frame_response_body(short_frame, 2, METADATA_KEY, 1, 0, err, sizeof err), -1);
}

/* Feeds data to the reader in pieces of `step` bytes; returns frames seen. */
static int feed(struct client_frame_reader *r, const uint8_t *data, size_t len, size_t step, uint8_t **frames,
                size_t *lens)
{
    int seen = 0;
    size_t pos = 0;
    char err[160];
    while (pos < len) {
        size_t room;
        uint8_t *dst = client_frame_reader_space(r, &room);
        assert_non_null(dst);
        assert_true(room > 0);
        size_t n = room < step ? room : step;
        if (n > len - pos)
            n = len - pos;
        memcpy(dst, data + pos, n);
        pos += n;
        int rc = client_frame_reader_advance(r, n, err, sizeof err);
        assert_true(rc >= 0);
        if (rc == 1) {
            frames[seen] = client_frame_reader_take(r, &lens[seen]);
            seen++;
        }
    }
    return seen;
}

static void test_reader_split_and_back_to_back_frames(void **state)
{
    (void)state;
    const uint8_t stream[] = {0, 0, 0, 5, 1, 2, 3, 4, 5, 0, 0, 0, 4, 9, 8, 7, 6};
    size_t steps[] = {1, 3, 7, sizeof stream};
    for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
        struct client_frame_reader r;
        client_frame_reader_init(&r, 1024);
        uint8_t *frames[4];
        size_t lens[4];
        assert_int_equal(feed(&r, stream, sizeof stream, steps[s], frames, lens), 2);
        assert_int_equal(lens[0], 5);
        assert_memory_equal(frames[0], stream + 4, 5);
        assert_int_equal(lens[1], 4);
        assert_memory_equal(frames[1], stream + 13, 4);
        free(frames[0]);
        free(frames[1]);
        client_frame_reader_free(&r);
    }
}

static void test_reader_refuses_oversized_and_negative_sizes(void **state)
{
    (void)state;
    const uint8_t sizes[][4] = {{0, 0, 4, 1}, {0xFF, 0xFF, 0xFF, 0xF0}, {0, 0, 0, 3}};
    for (int i = 0; i < 3; i++) {
        struct client_frame_reader r;
        client_frame_reader_init(&r, 1024);
        size_t room;
        uint8_t *dst = client_frame_reader_space(&r, &room);
        assert_int_equal(room, 4);
        memcpy(dst, sizes[i], 4);
        char err[160];
        assert_int_equal(client_frame_reader_advance(&r, 4, err, sizeof err), -1);
        assert_null(r.frame); /* refused before allocating */
        client_frame_reader_free(&r);
    }
}

static void test_version_choice(void **state)
{
    (void)state;
    const struct kafka_api_desc *d = kafka_api_lookup(METADATA_KEY);
    assert_int_equal(client_pick_version(d, 0, 9, -1), 9);
    assert_int_equal(client_pick_version(d, 0, 1000, -1), d->max_version);
    assert_int_equal(client_pick_version(d, 0, 9, 4), 4);
    assert_int_equal(client_pick_version(d, 0, 9, 10), -1);
    assert_int_equal(client_pick_version(d, (int16_t)(d->max_version + 1), (int16_t)(d->max_version + 3), -1), -1);
}

static void test_backoff_doubles_to_the_cap_with_jitter(void **state)
{
    (void)state;
    assert_int_equal(client_backoff_ms(50, 1000, 1, 0.5), 50);
    assert_int_equal(client_backoff_ms(50, 1000, 2, 0.5), 100);
    assert_int_equal(client_backoff_ms(50, 1000, 4, 0.5), 400);
    assert_int_equal(client_backoff_ms(50, 1000, 6, 0.5), 1000);
    assert_int_equal(client_backoff_ms(50, 1000, 60, 0.5), 1000);
    assert_int_equal(client_backoff_ms(50, 1000, 1, 0.0), 40);
    assert_true(client_backoff_ms(50, 1000, 1, 0.999999) <= 60);
    assert_true(client_backoff_ms(50, 1000, 1, 0.999999) >= 59);
    assert_int_equal(client_backoff_ms(0, 1000, 3, 0.5), 0);
}

static void test_api_versions_fallback(void **state)
{
    (void)state;
    assert_int_equal(client_api_versions_retry(3, -1), 0); /* nothing listed: v0 */
    assert_int_equal(client_api_versions_retry(3, 2), 2);  /* the broker's own max */
    assert_int_equal(client_api_versions_retry(3, 7), 0);  /* not lower: v0 */
    assert_int_equal(client_api_versions_retry(0, -1), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_frame_headers_v1_and_v2),
        cmocka_unit_test(test_failed_body_encode_frees_the_writer),
        cmocka_unit_test(test_response_header_and_correlation),
        cmocka_unit_test(test_reader_split_and_back_to_back_frames),
        cmocka_unit_test(test_reader_refuses_oversized_and_negative_sizes),
        cmocka_unit_test(test_version_choice),
        cmocka_unit_test(test_backoff_doubles_to_the_cap_with_jitter),
        cmocka_unit_test(test_api_versions_fallback),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
