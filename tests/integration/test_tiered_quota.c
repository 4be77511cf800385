/* KIP-956's remote copy and fetch quotas on a real cairnd with the
 * storage-local plugin: with a small remote.log.manager.copy.max.bytes.per.second
 * the bytes copied stay near it while producers run, with a small
 * remote.log.manager.fetch.max.bytes.per.second a consumer reading from
 * offset 0 is held near it, and in both cases every record is copied and
 * read back byte for byte. Unset, nothing is throttled; the copy quota
 * changes at runtime through AlterConfigs. Rates are only bounded from
 * above, and generously (twice the quota), so a slow machine passes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rk_helpers.h"
#include "tiered_common.h"

#define SELF "1"                   /* the single node's id */
#define QUOTA_BYTES_PER_SEC 524288 /* 512 KiB/s */
#define QUOTA_TEXT "524288"
#define SEGMENT_BYTES "262144"
#define RECORDS 30000 /* about 4 MB, 15 segments */
#define MIN_MEASURED_BYTES (2L * 1024 * 1024)

struct producer_run {
    struct tiered_state *st;
    long count;
    atomic_bool done;
};

static void *produce_main(void *arg)
{
    struct producer_run *run = arg;
    produce_round(run->st, run->count);
    atomic_store(&run->done, true);
    return NULL;
}

static int local_segments(const struct tiered_state *st)
{
    char local[800];
    snprintf(local, sizeof local, "%s/" TOPIC "-0", st->broker.data_dir);
    return count_files(local, ".log");
}

/* AlterConfigs on this broker's resource (replaces its dynamic set). */
static void alter_broker(struct tiered_state *st, const char *name, const char *value)
{
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(&st->broker), NULL);
    rd_kafka_ConfigResource_t *cr = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_BROKER, SELF);
    rd_kafka_ConfigResource_set_config(cr, name, value);
    rd_kafka_queue_t *queue = rd_kafka_queue_new(rk);
    rd_kafka_AlterConfigs(rk, &cr, 1, NULL, queue);
    rd_kafka_event_t *ev = rk_admin_result(queue, RD_KAFKA_EVENT_ALTERCONFIGS_RESULT, 30000);
    assert_int_equal(rd_kafka_event_error(ev), RD_KAFKA_RESP_ERR_NO_ERROR);
    size_t n = 0;
    const rd_kafka_ConfigResource_t **res = rd_kafka_AlterConfigs_result_resources(
        rd_kafka_event_AlterConfigs_result(ev), &n);
    assert_int_equal(n, 1);
    if (rd_kafka_ConfigResource_error(res[0]) != RD_KAFKA_RESP_ERR_NO_ERROR)
        fail_msg("AlterConfigs %s=%s: %s", name, value, rd_kafka_ConfigResource_error_string(res[0]));
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(queue);
    rd_kafka_ConfigResource_destroy(cr);
    rk_producer_destroy(rk);
}

/* Waits (deadline) until metric name reaches at least min; its value. */
static int64_t wait_metric_at_least(const struct tiered_state *st, const char *name, int64_t min, int deadline_ms)
{
    long long deadline = harness_now_ms() + deadline_ms;
    int64_t v = metric_value(st, name);
    while (v < min && harness_now_ms() < deadline) {
        usleep(100 * 1000);
        v = metric_value(st, name);
    }
    if (v < min)
        fail_msg("%s is %lld, want >= %lld", name, (long long)v, (long long)min);
    return v;
}

/* The copy quota: produce while sampling the bytes copied; from the first
 * copied byte until every closed segment is copied the rate stays within
 * twice the quota (and so does every stretch of >= 5 s). */
static void test_copy_quota_holds_copy_rate(void **state)
{
    struct tiered_state *st = *state;
    start_tiered_with(st, TOPIC,
                      (const char *const[]){"remote.log.manager.copy.max.bytes.per.second=" QUOTA_TEXT,
                                            "remote.log.manager.copy.quota.window.num=2",
                                            "remote.log.manager.copy.quota.window.size.seconds=1", NULL},
                      SEGMENT_BYTES);
    struct producer_run run = {.st = st, .count = RECORDS};
    atomic_init(&run.done, false);
    pthread_t producer;
    assert_int_equal(pthread_create(&producer, NULL, produce_main, &run), 0);
    enum { MAX_SAMPLES = 2000 };
    static long long at_ms[MAX_SAMPLES];
    static int64_t copied[MAX_SAMPLES];
    int n = 0;
    bool produced = false;
    long long deadline = harness_now_ms() + 120000;
    while (harness_now_ms() < deadline && n < MAX_SAMPLES) {
        int64_t bytes = metric_value(st, "cairn_remote_copy_bytes_total");
        if (bytes > 0) {
            at_ms[n] = harness_now_ms();
            copied[n++] = bytes;
        }
        /* Done: the producer finished and only the tail is local. */
        if (produced && local_segments(st) <= 2 && metric_value(st, "cairn_remote_copy_lag_segments") == 0)
            break;
        produced = produced || atomic_load(&run.done);
        usleep(100 * 1000);
    }
    pthread_join(producer, NULL);
    assert_true(produced);
    assert_true(n >= 2);
    int64_t measured = copied[n - 1] - copied[0];
    double seconds = (double)(at_ms[n - 1] - at_ms[0]) / 1000.0;
    double rate = seconds > 0 ? (double)measured / seconds : 1e18;
    print_message("copied %lld bytes in %.2f s after the first copy: %.0f bytes/s (quota %d)\n", (long long)measured,
                  seconds, rate, QUOTA_BYTES_PER_SEC);
    assert_true(measured >= MIN_MEASURED_BYTES);
    assert_true(rate <= 2.0 * QUOTA_BYTES_PER_SEC);
    for (int i = 0; i < n; i++) {
        for (int k = i + 1; k < n; k++) {
            if (at_ms[k] - at_ms[i] < 5000)
                continue;
            double window_rate = (double)(copied[k] - copied[i]) * 1000.0 / (double)(at_ms[k] - at_ms[i]);
            if (window_rate > 2.0 * QUOTA_BYTES_PER_SEC)
                fail_msg("%.0f bytes/s over %lld ms", window_rate, at_ms[k] - at_ms[i]);
            break;
        }
    }
    assert_true(metric_value(st, "cairn_remote_copy_throttle_time_ms_total") > 0);
    consume_all_from_zero(st);
    st->broker.passed = true;
}

/* The fetch quota: everything is remote; a consumer from offset 0 reads it
 * all byte for byte while the bytes read from the store stay within twice
 * the quota, and some fetches went back without remote data. */
static void test_fetch_quota_holds_remote_reads(void **state)
{
    struct tiered_state *st = *state;
    start_tiered_with(st, TOPIC,
                      (const char *const[]){"remote.log.manager.fetch.max.bytes.per.second=" QUOTA_TEXT,
                                            "remote.log.manager.fetch.quota.window.num=2",
                                            "remote.log.manager.fetch.quota.window.size.seconds=1", NULL},
                      SEGMENT_BYTES);
    produce_round(st, RECORDS);
    wait_tiered(st, 2, 10);
    int64_t before = metric_value(st, "cairn_remote_fetch_bytes_total");
    long long started = harness_now_ms();
    consume_all_from_zero(st);
    long long ended = harness_now_ms();
    int64_t measured = metric_value(st, "cairn_remote_fetch_bytes_total") - before;
    double seconds = (double)(ended - started) / 1000.0;
    double rate = (double)measured / seconds;
    print_message("read %lld remote bytes in %.2f s: %.0f bytes/s (quota %d)\n", (long long)measured, seconds, rate,
                  QUOTA_BYTES_PER_SEC);
    assert_true(measured >= MIN_MEASURED_BYTES);
    assert_true(rate <= 2.0 * QUOTA_BYTES_PER_SEC);
    assert_true(metric_value(st, "cairn_remote_fetch_throttled_total") > 0);
    st->broker.passed = true;
}

/* Unset, neither quota throttles; AlterConfigs then sets the copy quota on
 * the running broker (copies wait) and lifts it (everything is copied). */
static void test_unlimited_by_default_and_dynamic(void **state)
{
    struct tiered_state *st = *state;
    start_tiered_with(st, TOPIC,
                      (const char *const[]){"remote.log.manager.copy.quota.window.num=2",
                                            "remote.log.manager.copy.quota.window.size.seconds=1", NULL},
                      SEGMENT_BYTES);
    produce_round(st, RECORDS / 2);
    wait_tiered(st, 2, 5);
    consume_all_from_zero(st);
    assert_int_equal(metric_value(st, "cairn_remote_copy_throttle_time_ms_total"), 0);
    assert_int_equal(metric_value(st, "cairn_remote_fetch_throttled_total"), 0);

    /* One byte a second: after one segment each copy waits its bound. */
    alter_broker(st, "remote.log.manager.copy.max.bytes.per.second", "1");
    produce_round(st, RECORDS / 4);
    wait_metric_at_least(st, "cairn_remote_copy_throttle_time_ms_total", 1, 60000);
    alter_broker(st, "remote.log.manager.copy.max.bytes.per.second", "9223372036854775807");
    wait_tiered(st, 2, 7);
    consume_all_from_zero(st);
    st->broker.passed = true;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_copy_quota_holds_copy_rate, tiered_setup, tiered_teardown),
        cmocka_unit_test_setup_teardown(test_fetch_quota_holds_remote_reads, tiered_setup, tiered_teardown),
        cmocka_unit_test_setup_teardown(test_unlimited_by_default_and_dynamic, tiered_setup, tiered_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
