/* The quota plugin bounds bursts with Kafka's default window (11 samples of
 * 1 s): client id "bursty" has producer_byte_rate=1000000 and produces as
 * fast as it can for 24 s. The topic stamps each batch with the broker's
 * append time (LogAppendTime), which the delivery reports carry, so the
 * bytes admitted in each second are counted on the broker's clock whatever
 * the client's scheduling. After the first window no second may admit
 * more than 3 times the quota (Kafka's sampled rate let about ten seconds'
 * worth through at once each time the sample holding the last burst
 * expired), and the rate over the run must be the quota's, within the
 * bounds test_quota_rate uses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "rk_helpers.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BURST_TOPIC "quota-burst"
#define BURST_QUOTA_BYTES_PER_S 1000000
#define BURST_RUN_S 24
/* Kafka's default window, quota.window.num (11) samples of 1 s. */
#define BURST_WINDOW_S 11
/* Whole seconds checked for bursts: from the end of the first window to
 * the last second the producer ran in full. */
#define BURST_FIRST_CHECKED_S BURST_WINDOW_S
#define BURST_MAX_PER_SECOND (3.0 * BURST_QUOTA_BYTES_PER_S)
/* Span for the long-run rate: from 2 s (the first second's allowance
 * spent) to the end of the run. */
#define BURST_RATE_FROM_S 2
#define BURST_SLOTS (BURST_RUN_S + 16)

/* Written by librdkafka's delivery callback (inside the producing thread's
 * poll calls); read after the producer is destroyed. */
struct burst_run {
    long long start_wall_ms;
    atomic_llong bytes_per_second[BURST_SLOTS];
    atomic_long failed;
    atomic_long without_append_time; /* delivery reports lacking LogAppendTime */
    atomic_long throttled;
};

static long long burst_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void burst_throttle_cb(rd_kafka_t *rk, const char *broker_name, int32_t broker_id, int throttle_time_ms,
                              void *opaque)
{
    (void)rk, (void)broker_name, (void)broker_id;
    struct burst_run *run = opaque;
    if (throttle_time_ms > 0)
        atomic_fetch_add(&run->throttled, 1);
}

static void burst_delivery_cb(rd_kafka_t *rk, const rd_kafka_message_t *msg, void *opaque)
{
    (void)rk;
    struct burst_run *run = opaque;
    if (msg->err) {
        if (msg->err != RD_KAFKA_RESP_ERR__PURGE_QUEUE && msg->err != RD_KAFKA_RESP_ERR__PURGE_INFLIGHT)
            atomic_fetch_add(&run->failed, 1);
        return;
    }
    rd_kafka_timestamp_type_t type;
    long long appended_ms = (long long)rd_kafka_message_timestamp(msg, &type);
    if (type != RD_KAFKA_TIMESTAMP_LOG_APPEND_TIME) {
        atomic_fetch_add(&run->without_append_time, 1);
        return;
    }
    long long second = (appended_ms - run->start_wall_ms) / 1000;
    if (second >= 0 && second < BURST_SLOTS)
        atomic_fetch_add(&run->bytes_per_second[second], (long long)msg->len);
}

/* Produces 10 kB records to the topic until stop_ms (monotonic), keeping
 * the client's queue short so it offers whatever the broker will read.
 * Returns "" or what went wrong. */
static void burst_produce(const char *bootstrap, struct burst_run *run, long long stop_ms, char *error, size_t errlen)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char errstr[200];
    const char *settings[] = {"bootstrap.servers",
                              bootstrap,
                              "client.id",
                              "bursty",
                              "batch.size",
                              "65536",
                              "linger.ms",
                              "5",
                              "acks",
                              "1",
                              "queue.buffering.max.messages",
                              "500",
                              NULL};
    for (int i = 0; settings[i]; i += 2)
        if (rd_kafka_conf_set(conf, settings[i], settings[i + 1], errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
            snprintf(error, errlen, "%s: %s", settings[i], errstr);
            rd_kafka_conf_destroy(conf);
            return;
        }
    rd_kafka_conf_set_opaque(conf, run);
    rd_kafka_conf_set_dr_msg_cb(conf, burst_delivery_cb);
    rd_kafka_conf_set_throttle_cb(conf, burst_throttle_cb);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    if (!rk) {
        snprintf(error, errlen, "rd_kafka_new: %s", errstr);
        return;
    }
    size_t record_bytes = 10000;
    char *payload = malloc(record_bytes);
    assert_non_null(payload);
    memset(payload, 'b', record_bytes);
    while (harness_now_ms() < stop_ms) {
        rd_kafka_resp_err_t err = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(BURST_TOPIC), RD_KAFKA_V_PARTITION(0),
                                                    RD_KAFKA_V_VALUE(payload, record_bytes),
                                                    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
        if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
            rd_kafka_poll(rk, 5);
        } else if (err) {
            snprintf(error, errlen, "produce: %s", rd_kafka_err2str(err));
            break;
        } else {
            rd_kafka_poll(rk, 0);
        }
    }
    /* What is still queued would be appended after the run: drop it. What
     * is in flight is appended and counted in its second. */
    rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE);
    rd_kafka_flush(rk, 15000);
    rd_kafka_destroy(rk);
    free(payload);
}

static void test_no_second_far_over_quota(void **state)
{
    struct test_broker *broker = *state;
    char plugin_path[600];
    snprintf(plugin_path, sizeof plugin_path, "plugin.path=%s", CAIRN_PLUGIN_DIR);
    /* The window keys are left at Kafka's defaults, where bursts showed. */
    const char *overrides[] = {plugin_path, "plugins=quota",
                               "plugin.quota.entries=client-id=bursty:producer_byte_rate=1000000", NULL};
    broker_start(broker, overrides);
    const char *topic_configs[] = {"message.timestamp.type", "LogAppendTime", NULL};
    rk_create_topic(broker_bootstrap(broker), BURST_TOPIC, 1, topic_configs);

    static struct burst_run run;
    memset(&run, 0, sizeof run);
    char error[256] = "";
    run.start_wall_ms = burst_wall_ms();
    burst_produce(broker_bootstrap(broker), &run, harness_now_ms() + BURST_RUN_S * 1000LL, error, sizeof error);
    broker_stop(broker);
    if (error[0])
        fail_msg("producer: %s", error);

    long long per_second[BURST_SLOTS];
    char line[BURST_SLOTS * 8] = "";
    size_t used = 0;
    for (int s = 0; s < BURST_SLOTS; s++) {
        per_second[s] = atomic_load(&run.bytes_per_second[s]);
        if (s < BURST_RUN_S + 1 && used < sizeof line)
            used += (size_t)snprintf(line + used, sizeof line - used, " %.2f",
                                     (double)per_second[s] / BURST_QUOTA_BYTES_PER_S);
    }
    long long span_bytes = 0;
    for (int s = BURST_RATE_FROM_S; s < BURST_RUN_S; s++)
        span_bytes += per_second[s];
    double span_s = BURST_RUN_S - BURST_RATE_FROM_S;
    double rate = (double)span_bytes / span_s;
    fprintf(stderr, "[quota-burst] per second (x quota):%s\n[quota-burst] %.0f B/s from %d s to %d s (quota %d B/s)\n",
            line, rate, BURST_RATE_FROM_S, BURST_RUN_S, BURST_QUOTA_BYTES_PER_S);

    assert_int_equal(atomic_load(&run.failed), 0);
    assert_int_equal(atomic_load(&run.without_append_time), 0);
    assert_true(atomic_load(&run.throttled) > 0);
    for (int s = BURST_FIRST_CHECKED_S; s < BURST_RUN_S; s++) {
        if ((double)per_second[s] > BURST_MAX_PER_SECOND)
            fail_msg("second %d admitted %lld bytes, over %.0f (3 x the quota)", s, per_second[s],
                     BURST_MAX_PER_SECOND);
    }
    /* test_quota_rate's bounds: at least 90% of the quota, at most the
     * quota over the span and 2 s more (the bucket's one second and a
     * request's overshoot, loosely). */
    assert_true(rate >= 0.9 * BURST_QUOTA_BYTES_PER_S);
    assert_true(rate <= BURST_QUOTA_BYTES_PER_S * (span_s + 2.0) / span_s);
    broker_mark_passed(broker);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_second_far_over_quota),
    };
    return cmocka_run_group_tests(tests, broker_slot_setup, broker_slot_teardown);
}
