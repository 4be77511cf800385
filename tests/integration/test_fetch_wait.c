/* A Fetch that waits (max_wait_ms, min_bytes) over hundreds of partitions:
 * an append to any of them, the last included, answers it at once instead
 * of at its deadline. And KIP-74's response limit: only the first partition
 * with data may exceed max_bytes. Raw requests, so the test controls the
 * partition set and the limits. */
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

#define WAIT_PARTITIONS 300
#define FETCH_MAX_WAIT_MS 10000

/* The broker's /metrics listener (setup). */
static int g_metrics_port;

/* Sends Fetch v4 for partitions [0, count) of topic, each from offsets[p]. */
static void send_fetch(int fd, const char *topic, int count, const int64_t *offsets, int32_t max_wait_ms,
                       int32_t max_bytes, int32_t partition_max_bytes)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 1, 4, 11, "cairn-it");
    raw_put_i32(&w, -1); /* replica_id */
    raw_put_i32(&w, max_wait_ms);
    raw_put_i32(&w, 1); /* min_bytes */
    raw_put_i32(&w, max_bytes);
    raw_put_i8(&w, 0);  /* isolation_level */
    raw_put_i32(&w, 1); /* topics */
    raw_put_string(&w, topic);
    raw_put_i32(&w, count);
    for (int p = 0; p < count; p++) {
        raw_put_i32(&w, p);
        raw_put_i64(&w, offsets[p]); /* fetch_offset */
        raw_put_i32(&w, partition_max_bytes);
    }
    raw_frame_finish(&w);
    assert_int_equal(raw_send_all(fd, w.data, w.len), 0);
    raw_writer_free(&w);
}

static void send_waiting_fetch(int fd, const char *topic, int count, const int64_t *offsets)
{
    send_fetch(fd, topic, count, offsets, FETCH_MAX_WAIT_MS, 1 << 20, 65536);
}

/* Parses a Fetch v4 answer; returns the (last) partition holding records
 * (-1 if none); records_bytes[p] gets each partition's record bytes when
 * not NULL. */
static int partition_records(const uint8_t *frame, size_t len, int *partitions_seen, int32_t *records_bytes)
{
    struct raw_reader r;
    raw_reader_init(&r, frame, len);
    assert_int_equal(raw_get_i32(&r), 11); /* correlation id */
    raw_get_i32(&r);                       /* throttle */
    int with_records = -1;
    int32_t topics = raw_get_i32(&r);
    *partitions_seen = 0;
    for (int32_t t = 0; t < topics && !r.overflow; t++) {
        raw_skip_string(&r);
        int32_t parts = raw_get_i32(&r);
        for (int32_t i = 0; i < parts && !r.overflow; i++) {
            int32_t partition = raw_get_i32(&r);
            int16_t error = raw_get_i16(&r);
            if (error != 0)
                fail_msg("partition %d: error %d", partition, error);
            raw_get_i64(&r); /* high watermark */
            raw_get_i64(&r); /* last stable offset */
            int32_t aborted = raw_get_i32(&r);
            for (int32_t a = 0; a < aborted; a++)
                raw_skip(&r, 16);
            int32_t records = raw_get_i32(&r);
            if (records_bytes && partition >= 0 && partition < WAIT_PARTITIONS)
                records_bytes[partition] = records > 0 ? records : 0;
            if (records > 0) {
                with_records = partition;
                raw_skip(&r, (size_t)records);
            }
            (*partitions_seen)++;
        }
    }
    assert_false(r.overflow);
    return with_records;
}

static int partition_with_records(const uint8_t *frame, size_t len, int *partitions_seen)
{
    return partition_records(frame, len, partitions_seen, NULL);
}

static void test_wide_fetch_wakes_on_last_partition(void **state)
{
    struct test_broker *b = *state;
    const char *topic = "wide-fetch";
    rk_create_topic(broker_bootstrap(b), topic, WAIT_PARTITIONS, NULL);
    const char *conf[] = {"linger.ms", "0", NULL};
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(b), conf);

    /* The last partition, the first one past 64 watches, and the first. */
    int targets[] = {WAIT_PARTITIONS - 1, 64, 0};
    int64_t offsets[WAIT_PARTITIONS] = {0};
    for (size_t k = 0; k < sizeof targets / sizeof targets[0]; k++) {
        int target = targets[k];
        int fd = raw_connect(broker_port(b), FETCH_MAX_WAIT_MS + 5000);
        assert_true(fd >= 0);
        /* From the end of every partition: only the next append can
         * satisfy min_bytes. */
        send_waiting_fetch(fd, topic, WAIT_PARTITIONS, offsets);
        /* Parked before the append, so the append is what wakes it. */
        if (raw_wait_fetch_purgatory(g_metrics_port, 1, 10000) < 0)
            fail_msg("the fetch never parked (cairn_purgatory_waiting %lld)",
                     raw_fetch_purgatory_waiting(g_metrics_port));
        long long start = harness_now_ms();
        const char value[] = "wake up";
        rd_kafka_resp_err_t err = rk_produce_blocking(rk, topic, target, NULL, 0, value, sizeof value - 1, 0, NULL,
                                                      NULL);
        if (err)
            fail_msg("produce: %s", rd_kafka_err2str(err));
        assert_int_equal(rd_kafka_flush(rk, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
        uint8_t *frame = NULL;
        size_t len = 0;
        int rc = raw_recv_frame(fd, FETCH_MAX_WAIT_MS + 5000, 64 << 20, &frame, &len);
        long long took = harness_now_ms() - start;
        close(fd);
        if (rc != 0)
            fail_msg("no Fetch answer (rc %d)", rc);
        int seen = 0;
        int got = partition_with_records(frame, len, &seen);
        free(frame);
        fprintf(stderr, "[fetch-wait] append to partition %d answered the fetch in %lld ms\n", target, took);
        assert_int_equal(seen, WAIT_PARTITIONS);
        assert_int_equal(got, target);
        if (took > FETCH_MAX_WAIT_MS / 2)
            fail_msg("the fetch answered after %lld ms: the append to partition %d did not wake it", took, target);
        offsets[target]++;
    }
    rk_producer_destroy(rk);
    broker_mark_passed(b);
}

/* Three partitions, each starting with a 900 KiB record; max_bytes 1 MB,
 * partition_max_bytes 20 MB: the answer holds the first partition's batch
 * only (it may exceed max_bytes so the consumer progresses), not all three. */
static void test_max_bytes_bounds_later_partitions(void **state)
{
    struct test_broker *b = *state;
    const char *topic = "kip74-limit";
    const char *topic_conf[] = {"max.message.bytes", "2000000", NULL};
    rk_create_topic(broker_bootstrap(b), topic, 3, topic_conf);
    const char *conf[] = {"linger.ms", "0", "message.max.bytes", "2000000", NULL};
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(b), conf);
    size_t big = 900 * 1024;
    char *value = malloc(big);
    memset(value, 'v', big);
    for (int p = 0; p < 3; p++) {
        rd_kafka_resp_err_t err = rk_produce_blocking(rk, topic, p, NULL, 0, value, big, 0, NULL, NULL);
        if (err)
            fail_msg("produce: %s", rd_kafka_err2str(err));
    }
    assert_int_equal(rd_kafka_flush(rk, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
    free(value);
    rk_producer_destroy(rk);

    int fd = raw_connect(broker_port(b), 10000);
    assert_true(fd >= 0);
    int64_t offsets[3] = {0, 0, 0};
    send_fetch(fd, topic, 3, offsets, 0, 1000000, 20 << 20);
    uint8_t *frame = NULL;
    size_t len = 0;
    assert_int_equal(raw_recv_frame(fd, 10000, 64 << 20, &frame, &len), 0);
    close(fd);
    int seen = 0;
    int32_t bytes[WAIT_PARTITIONS] = {0};
    partition_records(frame, len, &seen, bytes);
    free(frame);
    fprintf(stderr, "[fetch-limit] response %zu bytes; records per partition: %d %d %d\n", len, bytes[0], bytes[1],
            bytes[2]);
    assert_int_equal(seen, 3);
    assert_true(bytes[0] > 900 * 1024);
    assert_int_equal(bytes[1], 0);
    assert_int_equal(bytes[2], 0);
    assert_true(len < 1000000 + 64 * 1024);
    broker_mark_passed(b);
}

static int setup(void **state)
{
    static struct test_broker b;
    memset(&b, 0, sizeof b);
    g_metrics_port = harness_free_port();
    static char metrics_kv[64];
    snprintf(metrics_kv, sizeof metrics_kv, "metrics.http.listener=127.0.0.1:%d", g_metrics_port);
    const char *overrides[] = {metrics_kv, NULL};
    broker_start(&b, overrides);
    *state = &b;
    return 0;
}

static int teardown(void **state)
{
    broker_cleanup(*state);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wide_fetch_wakes_on_last_partition),
        cmocka_unit_test(test_max_bytes_bounds_later_partitions),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
