/* min.insync.replicas above the ISR: on one broker, a topic asking for two
 * in-sync replicas refuses acks=all with NOT_ENOUGH_REPLICAS (and keeps
 * nothing), while acks=1 is still served, as Kafka does. The broker-level
 * default applies the same way. Raw Produce requests, so the test sees the
 * error code itself rather than a client's retries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "raw_kafka.h"
#include "rk_helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ERR_NOT_ENOUGH_REPLICAS 19

/* One Produce v7 of a one-record batch to partition 0; returns the
 * partition's error code and fills *base_offset. */
static int16_t produce_one(int port, const char *topic, int16_t acks, int64_t *base_offset)
{
    static int32_t correlation = 500;
    correlation++;
    struct raw_writer batch;
    raw_writer_init(&batch);
    struct raw_record rec = {"k", "v"};
    raw_build_record_batch(&batch, 1700000000000LL, &rec, 1);
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 0, 7, correlation, "min-isr");
    raw_put_produce_body(&w, NULL, acks, topic, 0, batch.data, batch.len);
    raw_writer_free(&batch);
    uint8_t *frame = NULL;
    struct raw_reader r;
    int rc = raw_exchange(port, &w, correlation, false, 15000, &frame, &r);
    if (rc != 0)
        fail_msg("Produce acks=%d to %s: no answer (rc %d)", acks, topic, rc);
    int32_t topics = raw_get_i32(&r);
    raw_skip_string(&r);
    int32_t partitions = raw_get_i32(&r);
    raw_get_i32(&r); /* partition index */
    int16_t error = raw_get_i16(&r);
    *base_offset = raw_get_i64(&r);
    assert_false(r.overflow);
    assert_int_equal(topics, 1);
    assert_int_equal(partitions, 1);
    free(frame);
    return error;
}

static void expect_refused_then_acks1(int port, const char *topic)
{
    int64_t offset = 0;
    assert_int_equal(produce_one(port, topic, -1, &offset), ERR_NOT_ENOUGH_REPLICAS);
    /* Nothing was appended: the next acks=1 record takes offset 0. */
    assert_int_equal(produce_one(port, topic, 1, &offset), 0);
    assert_int_equal(offset, 0);
    assert_int_equal(produce_one(port, topic, -1, &offset), ERR_NOT_ENOUGH_REPLICAS);
}

static void test_topic_min_insync_two_refuses_acks_all(void **state)
{
    (void)state;
    struct test_broker b;
    memset(&b, 0, sizeof b);
    broker_start(&b, NULL);
    const char *conf[] = {"min.insync.replicas", "2", NULL};
    rk_create_topic(broker_bootstrap(&b), "isr-two", 1, conf);
    expect_refused_then_acks1(broker_port(&b), "isr-two");
    /* A topic without the override still takes acks=all. */
    rk_create_topic(broker_bootstrap(&b), "isr-default", 1, NULL);
    int64_t offset = -1;
    assert_int_equal(produce_one(broker_port(&b), "isr-default", -1, &offset), 0);
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

static void test_broker_default_min_insync_two_refuses_acks_all(void **state)
{
    (void)state;
    struct test_broker b;
    memset(&b, 0, sizeof b);
    const char *overrides[] = {"min.insync.replicas=2", NULL};
    broker_start(&b, overrides);
    rk_create_topic(broker_bootstrap(&b), "isr-broker-default", 1, NULL);
    expect_refused_then_acks1(broker_port(&b), "isr-broker-default");
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_topic_min_insync_two_refuses_acks_all),
        cmocka_unit_test(test_broker_default_min_insync_two_refuses_acks_all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
