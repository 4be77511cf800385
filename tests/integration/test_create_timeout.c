/* The cost of creating many partitions is bounded by the request: a
 * CreateTopics or CreatePartitions answers within its TimeoutMs
 * (REQUEST_TIMED_OUT when the broker has not finished creating the logs by
 * then, as Kafka answers), at once after the commit with TimeoutMs 0, and
 * the broker goes on creating the partitions, which then take records. A
 * kill -9 right after such a create leaves partition directories half
 * made: the restart recreates or recovers them, never fails. */
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

#define API_CREATE_TOPICS 19
#define API_CREATE_PARTITIONS 37
#define ERR_NONE 0
#define ERR_REQUEST_TIMED_OUT 7
/* Far more than a broker creates in 1 ms, even unloaded and without ASan. */
#define MANY_PARTITIONS 2000
/* Generous: a loaded 2-core machine under ASan creating 2,000 logs. */
#define USABLE_WAIT_MS 180000
#define ANSWER_WAIT_MS 120000

/* Sends the request in w (correlation id correlation) and reads the error
 * code of the one topic both answers carry after their throttle time (name,
 * then error); -1 when no answer came or it holds another count. */
static int first_topic_error(const struct test_broker *b, struct raw_writer *w, int32_t correlation)
{
    uint8_t *frame = NULL;
    struct raw_reader r;
    int rc = raw_exchange(broker_port(b), w, correlation, false, ANSWER_WAIT_MS, &frame, &r);
    int code = -1;
    if (rc == 0) {
        (void)raw_get_i32(&r); /* throttle */
        if (raw_get_i32(&r) == 1) {
            raw_skip_string(&r);
            code = raw_get_i16(&r);
        }
        if (r.overflow)
            code = -1;
    }
    free(frame);
    return code;
}

/* CreateTopics v4 of one topic; returns the topic's error code, -1 when no
 * answer came. */
static int create_topic(const struct test_broker *b, const char *topic, int32_t partitions, int32_t timeout_ms)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, API_CREATE_TOPICS, 4, 1, "create-timeout");
    raw_put_i32(&w, 1);
    raw_put_string(&w, topic);
    raw_put_i32(&w, partitions);
    raw_put_i16(&w, 1);
    raw_put_i32(&w, 0); /* assignments */
    raw_put_i32(&w, 0); /* configs */
    raw_put_i32(&w, timeout_ms);
    raw_put_i8(&w, 0); /* validate_only */
    return first_topic_error(b, &w, 1);
}

/* CreatePartitions v1 of one topic to total partitions. */
static int grow_topic(const struct test_broker *b, const char *topic, int32_t total, int32_t timeout_ms)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, API_CREATE_PARTITIONS, 1, 2, "create-timeout");
    raw_put_i32(&w, 1);
    raw_put_string(&w, topic);
    raw_put_i32(&w, total);
    raw_put_i32(&w, -1); /* assignments: null */
    raw_put_i32(&w, timeout_ms);
    raw_put_i8(&w, 0);
    return first_topic_error(b, &w, 2);
}

/* One record to each of the partitions, the client retrying while a
 * partition's log is still being created: true once all are delivered. */
static bool partitions_take_records(const struct test_broker *b, const char *topic, const int32_t *partitions,
                                    int count)
{
    const char *conf[] = {"message.timeout.ms", "170000", "retry.backoff.ms", "100", NULL};
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(b), conf);
    struct rk_delivery_slot slots[8] = {{0}};
    assert_true(count <= 8);
    for (int i = 0; i < count; i++)
        assert_int_equal(rk_produce_blocking(rk, topic, partitions[i], NULL, 0, "v", 1, 0, NULL, &slots[i]), 0);
    long long deadline = harness_now_ms() + USABLE_WAIT_MS;
    bool all = false;
    while (!all && harness_now_ms() < deadline) {
        rd_kafka_poll(rk, 100);
        all = true;
        for (int i = 0; i < count; i++)
            all &= slots[i].done;
    }
    bool delivered = all;
    for (int i = 0; i < count && delivered; i++)
        delivered = slots[i].err == RD_KAFKA_RESP_ERR_NO_ERROR;
    rk_producer_destroy(rk);
    return delivered;
}

/* A short TimeoutMs is answered REQUEST_TIMED_OUT long before the 2,000
 * logs exist (before, the answer waited for all of them, then said NONE);
 * the topic is created all the same. */
static void test_create_topics_answers_within_timeout(void **state)
{
    struct test_broker *b = *state;
    broker_start(b, NULL);
    assert_int_equal(create_topic(b, "many-timed", MANY_PARTITIONS, 1), ERR_REQUEST_TIMED_OUT);
    int32_t parts[] = {0, MANY_PARTITIONS / 2, MANY_PARTITIONS - 1};
    assert_true(partitions_take_records(b, "many-timed", parts, 3));
    /* It exists: a second create says so. */
    assert_int_equal(create_topic(b, "many-timed", 1, 30000), 36 /* TOPIC_ALREADY_EXISTS */);
    broker_mark_passed(b);
}

/* TimeoutMs 0: answered once committed (NONE), as Kafka does. */
static void test_create_topics_timeout_zero_answers_after_commit(void **state)
{
    struct test_broker *b = *state;
    broker_start(b, NULL);
    assert_int_equal(create_topic(b, "many-zero", MANY_PARTITIONS, 0), ERR_NONE);
    int32_t parts[] = {0, MANY_PARTITIONS - 1};
    assert_true(partitions_take_records(b, "many-zero", parts, 2));
    broker_mark_passed(b);
}

/* The fuzzer's case: CreatePartitions growing a topic by 2,000 honours its
 * TimeoutMs too. */
static void test_create_partitions_answers_within_timeout(void **state)
{
    struct test_broker *b = *state;
    broker_start(b, NULL);
    assert_int_equal(create_topic(b, "grown", 1, 30000), ERR_NONE);
    assert_int_equal(grow_topic(b, "grown", MANY_PARTITIONS + 1, 1), ERR_REQUEST_TIMED_OUT);
    int32_t parts[] = {0, MANY_PARTITIONS};
    assert_true(partitions_take_records(b, "grown", parts, 2));
    broker_mark_passed(b);
}

/* kill -9 while the broker is still creating the logs of an answered
 * create: the restart completes whatever directories it finds (empty,
 * without a segment or partition.metadata) and creates the missing ones. */
static void test_kill9_during_create_restarts(void **state)
{
    struct test_broker *b = *state;
    broker_start(b, NULL);
    assert_int_equal(create_topic(b, "crashed", MANY_PARTITIONS, 0), ERR_NONE);
    broker_kill9(b);
    broker_restart(b);
    int32_t parts[] = {0, MANY_PARTITIONS / 3, MANY_PARTITIONS - 1};
    assert_true(partitions_take_records(b, "crashed", parts, 3));
    broker_mark_passed(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_topics_answers_within_timeout, broker_slot_setup,
                                        broker_slot_teardown),
        cmocka_unit_test_setup_teardown(test_create_topics_timeout_zero_answers_after_commit, broker_slot_setup,
                                        broker_slot_teardown),
        cmocka_unit_test_setup_teardown(test_create_partitions_answers_within_timeout, broker_slot_setup,
                                        broker_slot_teardown),
        cmocka_unit_test_setup_teardown(test_kill9_during_create_restarts, broker_slot_setup, broker_slot_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
