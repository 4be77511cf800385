/* The quota plugin in a real cairnd: a producer whose client id has a
 * 200000 B/s producer quota is slowed and told so (throttle callback),
 * while a producer with another client id, in the same run, is not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "rk_helpers.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QUOTA_IT_TOPIC "quota-it"
#define QUOTA_IT_MESSAGES 200
#define QUOTA_IT_MESSAGE_BYTES 10000 /* 2 MB in all */

/* One producer run. Written by its thread; read by main after join.
 * max_throttle_ms and delivered are also touched by librdkafka callbacks,
 * which run inside that thread's poll/flush calls. */
struct quota_it_run {
    const char *bootstrap;
    const char *client_id;
    long long elapsed_ms;
    atomic_int max_throttle_ms;
    atomic_int throttle_events;
    atomic_long delivered;
    atomic_long failed;
    char error[512];
};

static void quota_it_throttle_cb(rd_kafka_t *rk, const char *broker_name, int32_t broker_id, int throttle_time_ms,
                                 void *opaque)
{
    (void)rk;
    (void)broker_name;
    (void)broker_id;
    struct quota_it_run *run = opaque;
    if (throttle_time_ms > 0)
        atomic_fetch_add(&run->throttle_events, 1);
    int seen = atomic_load(&run->max_throttle_ms);
    while (throttle_time_ms > seen && !atomic_compare_exchange_weak(&run->max_throttle_ms, &seen, throttle_time_ms)) {
    }
}

static void quota_it_delivery_cb(rd_kafka_t *rk, const rd_kafka_message_t *msg, void *opaque)
{
    (void)rk;
    struct quota_it_run *run = opaque;
    if (msg->err)
        atomic_fetch_add(&run->failed, 1);
    else
        atomic_fetch_add(&run->delivered, 1);
}

static void *quota_it_produce(void *arg)
{
    struct quota_it_run *run = arg;
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char errstr[200];
    /* Requests of ~64 KB, so the quota is enforced request by request
     * rather than on a few 1 MB batches. */
    const char *settings[] = {"bootstrap.servers",
                              run->bootstrap,
                              "client.id",
                              run->client_id,
                              "batch.size",
                              "65536",
                              "linger.ms",
                              "5",
                              "acks",
                              "1",
                              "message.timeout.ms",
                              "60000",
                              NULL};
    for (int i = 0; settings[i]; i += 2) {
        if (rd_kafka_conf_set(conf, settings[i], settings[i + 1], errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) {
            snprintf(run->error, sizeof(run->error), "%s: %s", settings[i], errstr);
            rd_kafka_conf_destroy(conf);
            return NULL;
        }
    }
    rd_kafka_conf_set_opaque(conf, run);
    rd_kafka_conf_set_throttle_cb(conf, quota_it_throttle_cb);
    rd_kafka_conf_set_dr_msg_cb(conf, quota_it_delivery_cb);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (!rk) {
        snprintf(run->error, sizeof(run->error), "rd_kafka_new: %s", errstr);
        return NULL;
    }
    static char payload[QUOTA_IT_MESSAGE_BYTES];
    memset(payload, 'q', sizeof(payload));
    long long start = harness_now_ms();
    for (int i = 0; i < QUOTA_IT_MESSAGES; i++) {
        rd_kafka_resp_err_t err;
        while ((err = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(QUOTA_IT_TOPIC), RD_KAFKA_V_PARTITION(0),
                                        RD_KAFKA_V_VALUE(payload, sizeof(payload)),
                                        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END)) ==
               RD_KAFKA_RESP_ERR__QUEUE_FULL)
            rd_kafka_poll(rk, 10);
        if (err) {
            snprintf(run->error, sizeof(run->error), "produce: %s", rd_kafka_err2str(err));
            break;
        }
        rd_kafka_poll(rk, 0);
    }
    rd_kafka_flush(rk, 60000);
    run->elapsed_ms = harness_now_ms() - start;
    /* Throttle callbacks are served by poll. */
    rd_kafka_poll(rk, 100);
    rd_kafka_destroy(rk);
    return NULL;
}

static void test_producer_byte_rate_per_client_id(void **state)
{
    struct test_broker *broker = *state;
    char plugin_path[600];
    snprintf(plugin_path, sizeof(plugin_path), "plugin.path=%s", CAIRN_PLUGIN_DIR);
    /* Two one-second windows instead of Kafka's eleven: with eleven and
     * throttle.algorithm=sampled-rate, a client may burst ten seconds'
     * worth (all 2 MB here) before the measured rate passes the quota. */
    const char *overrides[] = {plugin_path,
                               "plugins=quota",
                               "plugin.quota.entries=client-id=slow:producer_byte_rate=200000",
                               "plugin.quota.quota.window.num=2",
                               "plugin.quota.quota.window.size.seconds=1",
                               NULL};
    broker_start(broker, overrides);
    rk_create_topic(broker_bootstrap(broker), QUOTA_IT_TOPIC, 1, NULL);

    struct quota_it_run slow = {.bootstrap = broker_bootstrap(broker), .client_id = "slow"};
    struct quota_it_run fast = {.bootstrap = broker_bootstrap(broker), .client_id = "fast"};
    pthread_t slow_thread, fast_thread;
    assert_int_equal(pthread_create(&slow_thread, NULL, quota_it_produce, &slow), 0);
    assert_int_equal(pthread_create(&fast_thread, NULL, quota_it_produce, &fast), 0);
    pthread_join(slow_thread, NULL);
    pthread_join(fast_thread, NULL);
    fprintf(stderr,
            "[quota-it] slow: %lld ms, max throttle %d ms (%d throttled responses); fast: %lld ms, "
            "max throttle %d ms\n",
            slow.elapsed_ms, atomic_load(&slow.max_throttle_ms), atomic_load(&slow.throttle_events), fast.elapsed_ms,
            atomic_load(&fast.max_throttle_ms));
    if (slow.error[0] || fast.error[0])
        fail_msg("producer error: slow '%s', fast '%s'", slow.error, fast.error);
    assert_int_equal(atomic_load(&slow.delivered), QUOTA_IT_MESSAGES);
    assert_int_equal(atomic_load(&fast.delivered), QUOTA_IT_MESSAGES);

    /* 2 MB at 200000 B/s, less what the first window lets through. */
    if (slow.elapsed_ms < 7500)
        fail_msg("client-id slow sent 2 MB in %lld ms; its quota allows no less than ~8 s", slow.elapsed_ms);
    assert_true(atomic_load(&slow.max_throttle_ms) > 0);
    assert_int_equal(atomic_load(&fast.max_throttle_ms), 0);
    if (fast.elapsed_ms * 2 > slow.elapsed_ms)
        fail_msg("client-id fast took %lld ms against slow's %lld ms: it was slowed too", fast.elapsed_ms,
                 slow.elapsed_ms);
    broker_stop(broker);
    broker_mark_passed(broker);
}

static int quota_it_setup(void **state)
{
    static struct test_broker broker;
    memset(&broker, 0, sizeof(broker));
    *state = &broker;
    return 0;
}

static int quota_it_teardown(void **state)
{
    broker_cleanup(*state);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_producer_byte_rate_per_client_id),
    };
    return cmocka_run_group_tests(tests, quota_it_setup, quota_it_teardown);
}
