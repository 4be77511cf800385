/* Committed offset metadata is a Kafka string: a NUL byte inside it is
 * data. OffsetCommit stores all of its bytes, OffsetFetch answers all of
 * them, before and after a restart (the __consumer_offsets record), as
 * Kafka does (librdkafka 2.12's test 0099 commits "Hello\0world!"). Raw
 * requests, since the bytes must be exact. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "raw_kafka.h"
#include "raw_session.h"
#include "rk_helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define API_OFFSET_COMMIT 8
#define API_OFFSET_FETCH 9
#define TOPIC "metadata-bytes"
#define GROUP "metadata-bytes-group"

static const char METADATA[] = "Hello\0world!";
#define METADATA_LEN (sizeof METADATA - 1) /* 12: the NUL inside counts */

/* OffsetCommit v2, a simple commit (generation -1) of offset 42 with
 * METADATA for partition 0; returns the partition's error code. */
static int16_t commit(int port, int32_t correlation)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, API_OFFSET_COMMIT, 2, correlation, "cairn-it");
    raw_put_string(&w, GROUP);
    raw_put_i32(&w, -1); /* generation_id */
    raw_put_string(&w, "");
    raw_put_i64(&w, -1); /* retention_time_ms: the broker's */
    raw_put_i32(&w, 1);
    raw_put_string(&w, TOPIC);
    raw_put_i32(&w, 1);
    raw_put_i32(&w, 0);  /* partition */
    raw_put_i64(&w, 42); /* offset */
    raw_put_i16(&w, (int16_t)METADATA_LEN);
    raw_put_bytes(&w, METADATA, METADATA_LEN);

    uint8_t *frame = NULL;
    struct raw_reader r;
    assert_int_equal(raw_exchange(port, &w, correlation, false, 10000, &frame, &r), 0);
    raw_expect_one_partition(&r, 0);
    int16_t error = raw_get_i16(&r);
    assert_false(r.overflow);
    assert_int_equal(r.pos, r.len);
    free(frame);
    return error;
}

/* OffsetFetch v1 for partition 0: the offset and the metadata's bytes. */
static void fetch(int port, int32_t correlation, int64_t *offset, char *metadata, size_t cap, int *metadata_len)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, API_OFFSET_FETCH, 1, correlation, "cairn-it");
    raw_put_string(&w, GROUP);
    raw_put_i32(&w, 1);
    raw_put_string(&w, TOPIC);
    raw_put_i32(&w, 1);
    raw_put_i32(&w, 0);

    uint8_t *frame = NULL;
    struct raw_reader r;
    assert_int_equal(raw_exchange(port, &w, correlation, false, 10000, &frame, &r), 0);
    raw_expect_one_partition(&r, 0);
    *offset = raw_get_i64(&r);
    int16_t n = raw_get_i16(&r);
    *metadata_len = n;
    if (n > 0) {
        assert_true((size_t)n <= cap && r.pos + (size_t)n <= r.len);
        memcpy(metadata, r.data + r.pos, (size_t)n);
        raw_skip(&r, (size_t)n);
    }
    assert_int_equal(raw_get_i16(&r), 0); /* error_code */
    assert_false(r.overflow);
    assert_int_equal(r.pos, r.len);
    free(frame);
}

static void expect_metadata(int port, int32_t correlation)
{
    int64_t offset;
    char metadata[64];
    int len;
    fetch(port, correlation, &offset, metadata, sizeof metadata, &len);
    assert_int_equal(offset, 42);
    assert_int_equal(len, (int)METADATA_LEN);
    assert_memory_equal(metadata, METADATA, METADATA_LEN);
}

static void test_metadata_with_nul_byte(void **state)
{
    (void)state;
    struct test_broker broker;
    memset(&broker, 0, sizeof broker);
    broker_start(&broker, NULL);
    rk_create_topic(broker_bootstrap(&broker), TOPIC, 1, NULL);

    assert_int_equal(commit(broker_port(&broker), 1), 0);
    expect_metadata(broker_port(&broker), 2);

    broker_stop(&broker);
    broker_restart(&broker);
    expect_metadata(broker_port(&broker), 3);

    broker_mark_passed(&broker);
    broker_cleanup(&broker);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metadata_with_nul_byte),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
