/* Dynamic broker configs: AlterConfigs on a BROKER resource through
 * librdkafka's admin client, IncrementalAlterConfigs (the cluster-wide
 * default "" and refusals) as raw requests (librdkafka 2.0.2 has no call
 * for it), DescribeConfigs sources, synonyms and read-only flags, the
 * effect without restart (a lowered message.max.bytes refuses a bigger
 * produce; max.connections.per.ip refuses a connection) and after one. */
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

#define SELF "1" /* the single node's id (node.id -1 means 1) */
#define ERR_INVALID_CONFIG 40
#define ERR_INVALID_REQUEST 42
#define OP_SET 0
#define OP_DELETE 1

/* Owned by the test's main thread. */
struct dyn_state {
    struct test_broker broker;
    rd_kafka_t *rk;
};

/* One broker config as DescribeConfigs reports it (strings malloc'd). */
struct described {
    char *value;
    rd_kafka_ConfigSource_t source;
    bool read_only;
    bool sensitive;
    int synonyms;
    rd_kafka_ConfigSource_t synonym_source[4];
    char *synonym_value[4];
};

static void described_free(struct described *d)
{
    free(d->value);
    for (int i = 0; i < d->synonyms && i < 4; i++)
        free(d->synonym_value[i]);
}

static char *dup_or_null(const char *s)
{
    return strdup(s ? s : "(null)");
}

/* DescribeConfigs of one resource (BROKER or TOPIC) through librdkafka;
 * fails the test when name is not in the answer. */
static struct described describe(rd_kafka_t *rk, rd_kafka_ResourceType_t type, const char *resource, const char *name)
{
    rd_kafka_ConfigResource_t *cr = rd_kafka_ConfigResource_new(type, resource);
    rd_kafka_queue_t *queue = rd_kafka_queue_new(rk);
    rd_kafka_DescribeConfigs(rk, &cr, 1, NULL, queue);
    rd_kafka_event_t *ev = rk_admin_result(queue, RD_KAFKA_EVENT_DESCRIBECONFIGS_RESULT, 20000);
    if (rd_kafka_event_error(ev))
        fail_msg("DescribeConfigs %s: %s", resource, rd_kafka_event_error_string(ev));
    size_t n = 0;
    const rd_kafka_ConfigResource_t **res = rd_kafka_DescribeConfigs_result_resources(
        rd_kafka_event_DescribeConfigs_result(ev), &n);
    if (n != 1 || rd_kafka_ConfigResource_error(res[0]))
        fail_msg("DescribeConfigs %s failed: %s", resource, n ? rd_kafka_ConfigResource_error_string(res[0]) : "");
    size_t count = 0;
    const rd_kafka_ConfigEntry_t **entries = rd_kafka_ConfigResource_configs(res[0], &count);
    struct described d = {0};
    bool found = false;
    for (size_t i = 0; i < count && !found; i++) {
        if (strcmp(rd_kafka_ConfigEntry_name(entries[i]), name) != 0)
            continue;
        found = true;
        d.value = dup_or_null(rd_kafka_ConfigEntry_value(entries[i]));
        d.source = rd_kafka_ConfigEntry_source(entries[i]);
        d.read_only = rd_kafka_ConfigEntry_is_read_only(entries[i]);
        d.sensitive = rd_kafka_ConfigEntry_is_sensitive(entries[i]);
        size_t syn_count = 0;
        const rd_kafka_ConfigEntry_t **syn = rd_kafka_ConfigEntry_synonyms(entries[i], &syn_count);
        d.synonyms = (int)syn_count;
        for (size_t s = 0; s < syn_count && s < 4; s++) {
            d.synonym_source[s] = rd_kafka_ConfigEntry_source(syn[s]);
            d.synonym_value[s] = dup_or_null(rd_kafka_ConfigEntry_value(syn[s]));
        }
    }
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(queue);
    rd_kafka_ConfigResource_destroy(cr);
    if (!found)
        fail_msg("DescribeConfigs %s: no entry %s", resource, name);
    return d;
}

static void expect_broker_config(rd_kafka_t *rk, const char *name, const char *value, rd_kafka_ConfigSource_t source)
{
    struct described d = describe(rk, RD_KAFKA_RESOURCE_BROKER, SELF, name);
    if (strcmp(d.value, value) != 0 || d.source != source)
        fail_msg("broker %s is %s (%s), expected %s (%s)", name, d.value, rd_kafka_ConfigSource_name(d.source), value,
                 rd_kafka_ConfigSource_name(source));
    described_free(&d);
}

/* AlterConfigs on this broker's resource through librdkafka. */
static rd_kafka_resp_err_t alter_broker(rd_kafka_t *rk, const char *name, const char *value, char *msg, size_t msglen)
{
    rd_kafka_ConfigResource_t *cr = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_BROKER, SELF);
    rd_kafka_ConfigResource_set_config(cr, name, value);
    rd_kafka_queue_t *queue = rd_kafka_queue_new(rk);
    rd_kafka_AlterConfigs(rk, &cr, 1, NULL, queue);
    rd_kafka_event_t *ev = rk_admin_result(queue, RD_KAFKA_EVENT_ALTERCONFIGS_RESULT, 20000);
    rd_kafka_resp_err_t err = rd_kafka_event_error(ev);
    snprintf(msg, msglen, "%s", err ? rd_kafka_event_error_string(ev) : "");
    if (!err) {
        size_t n = 0;
        const rd_kafka_ConfigResource_t **res = rd_kafka_AlterConfigs_result_resources(
            rd_kafka_event_AlterConfigs_result(ev), &n);
        assert_int_equal(n, 1);
        err = rd_kafka_ConfigResource_error(res[0]);
        const char *m = rd_kafka_ConfigResource_error_string(res[0]);
        snprintf(msg, msglen, "%s", m ? m : "");
    }
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(queue);
    rd_kafka_ConfigResource_destroy(cr);
    return err;
}

/* IncrementalAlterConfigs on one BROKER resource with one change, raw;
 * returns the resource's error code and copies its message. */
static int16_t incremental(const struct test_broker *b, const char *resource, const char *key, int8_t op,
                           const char *value, char *msg, size_t msglen)
{
    int code = raw_incremental_alter_broker(broker_port(b), resource, key, op, value, msg, msglen);
    if (code < 0)
        fail_msg("no IncrementalAlterConfigs answer for %s", key);
    return (int16_t)code;
}

static void expect_refusal(const struct test_broker *b, const char *resource, const char *key, const char *value,
                           int16_t want, const char *in_message)
{
    char msg[512];
    int16_t got = incremental(b, resource, key, OP_SET, value, msg, sizeof msg);
    if (got != want || !strstr(msg, in_message))
        fail_msg("setting %s=%s on '%s': error %d '%s', expected %d naming '%s'", key, value, resource, got, msg, want,
                 in_message);
}

/* One message of n bytes, delivered (or refused) before this returns:
 * the broker's answer for it. */
static rd_kafka_resp_err_t produce_bytes(rd_kafka_t *rk, const char *topic, size_t n)
{
    char *value = malloc(n);
    assert_non_null(value);
    memset(value, 'm', n);
    struct rk_delivery_slot slot = {0};
    rd_kafka_resp_err_t err = rk_produce_blocking(rk, topic, 0, NULL, 0, value, n, 0, NULL, &slot);
    free(value);
    if (err)
        return err;
    rd_kafka_flush(rk, 15000);
    if (!slot.done)
        fail_msg("no delivery report for a %zu-byte message within 15 s", n);
    return slot.err;
}

static void test_message_max_bytes_at_runtime_and_after_restart(void **state)
{
    struct dyn_state *st = *state;
    const char *topic = "dyn-max-bytes";
    rk_create_topic(broker_bootstrap(&st->broker), topic, 1, NULL);
    assert_int_equal(produce_bytes(st->rk, topic, 5000), RD_KAFKA_RESP_ERR_NO_ERROR);

    /* Sources before any change: static (set by --override) and default. */
    expect_broker_config(st->rk, "log.retention.hours", "100", RD_KAFKA_CONFIG_SOURCE_STATIC_BROKER_CONFIG);
    struct described io = describe(st->rk, RD_KAFKA_RESOURCE_BROKER, SELF, "num.io.threads");
    assert_int_equal(io.source, RD_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG);
    assert_true(io.read_only);
    described_free(&io);
    struct described pw = describe(st->rk, RD_KAFKA_RESOURCE_BROKER, SELF, "ssl.key.password");
    assert_true(pw.sensitive);
    described_free(&pw);

    char msg[512];
    rd_kafka_resp_err_t rc = alter_broker(st->rk, "message.max.bytes", "2000", msg, sizeof msg);
    if (rc)
        fail_msg("AlterConfigs message.max.bytes: %s (%s)", rd_kafka_err2name(rc), msg);
    struct described mmb = describe(st->rk, RD_KAFKA_RESOURCE_BROKER, SELF, "message.max.bytes");
    assert_string_equal(mmb.value, "2000");
    assert_int_equal(mmb.source, RD_KAFKA_CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG);
    assert_false(mmb.read_only);
    /* Synonyms, highest precedence first: this broker's value, then the default. */
    assert_int_equal(mmb.synonyms, 2);
    assert_int_equal(mmb.synonym_source[0], RD_KAFKA_CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG);
    assert_string_equal(mmb.synonym_value[0], "2000");
    assert_int_equal(mmb.synonym_source[1], RD_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG);
    assert_string_equal(mmb.synonym_value[1], "1048588");
    described_free(&mmb);

    /* The topic's default follows at once: a bigger batch is refused. */
    struct described tmax = describe(st->rk, RD_KAFKA_RESOURCE_TOPIC, topic, "max.message.bytes");
    assert_string_equal(tmax.value, "2000");
    assert_int_equal(tmax.source, RD_KAFKA_CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG);
    described_free(&tmax);
    assert_int_equal(produce_bytes(st->rk, topic, 5000), RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
    assert_int_equal(produce_bytes(st->rk, topic, 500), RD_KAFKA_RESP_ERR_NO_ERROR);

    /* The metadata log keeps it across a restart. */
    rk_producer_destroy(st->rk);
    broker_stop(&st->broker);
    broker_restart(&st->broker);
    const char *conf[] = {"linger.ms", "0", NULL};
    st->rk = rk_producer_new(broker_bootstrap(&st->broker), conf);
    expect_broker_config(st->rk, "message.max.bytes", "2000", RD_KAFKA_CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG);
    assert_int_equal(produce_bytes(st->rk, topic, 5000), RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);

    /* AlterConfigs replaces the resource's set: message.max.bytes is dropped. */
    rc = alter_broker(st->rk, "log.retention.bytes", "123456789", msg, sizeof msg);
    if (rc)
        fail_msg("AlterConfigs log.retention.bytes: %s (%s)", rd_kafka_err2name(rc), msg);
    expect_broker_config(st->rk, "message.max.bytes", "1048588", RD_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG);
    assert_int_equal(produce_bytes(st->rk, topic, 5000), RD_KAFKA_RESP_ERR_NO_ERROR);
}

static void test_cluster_default_and_refusals(void **state)
{
    struct dyn_state *st = *state;
    char msg[512];
    /* The cluster-wide default sits under a per-broker value. */
    assert_int_equal(incremental(&st->broker, "", "log.retention.ms", OP_SET, "3600000", msg, sizeof msg), 0);
    expect_broker_config(st->rk, "log.retention.ms", "3600000", RD_KAFKA_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG);
    assert_int_equal(incremental(&st->broker, SELF, "log.retention.ms", OP_SET, "7200000", msg, sizeof msg), 0);
    struct described d = describe(st->rk, RD_KAFKA_RESOURCE_BROKER, SELF, "log.retention.ms");
    assert_string_equal(d.value, "7200000");
    assert_int_equal(d.synonyms, 2);
    assert_int_equal(d.synonym_source[0], RD_KAFKA_CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG);
    assert_int_equal(d.synonym_source[1], RD_KAFKA_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG);
    described_free(&d);
    const char *topic = "dyn-retention";
    rk_create_topic(broker_bootstrap(&st->broker), topic, 1, NULL);
    struct described t = describe(st->rk, RD_KAFKA_RESOURCE_TOPIC, topic, "retention.ms");
    assert_string_equal(t.value, "7200000");
    assert_int_equal(t.source, RD_KAFKA_CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG);
    described_free(&t);
    /* Deleting the broker's value falls back to the default layer. */
    assert_int_equal(incremental(&st->broker, SELF, "log.retention.ms", OP_DELETE, NULL, msg, sizeof msg), 0);
    expect_broker_config(st->rk, "log.retention.ms", "3600000", RD_KAFKA_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG);

    /* Refused, each with a message naming the key. */
    expect_refusal(&st->broker, SELF, "num.io.threads", "4", ERR_INVALID_CONFIG, "num.io.threads");
    expect_refusal(&st->broker, SELF, "log.cleaner.threads", "2", ERR_INVALID_CONFIG, "log.cleaner.threads");
    expect_refusal(&st->broker, SELF, "log.dirs", "/tmp/x", ERR_INVALID_CONFIG, "log.dirs");
    expect_refusal(&st->broker, SELF, "no.such.key", "1", ERR_INVALID_CONFIG, "no.such.key");
    expect_refusal(&st->broker, SELF, "message.max.bytes", "-3", ERR_INVALID_CONFIG, "message.max.bytes");
    expect_refusal(&st->broker, "abc", "message.max.bytes", "1000", ERR_INVALID_REQUEST, "broker");
    expect_broker_config(st->rk, "num.io.threads", "8", RD_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG);
}

static void test_connection_limit_at_runtime(void **state)
{
    struct dyn_state *st = *state;
    char msg[512];
    assert_int_equal(incremental(&st->broker, "", "max.connections.per.ip", OP_SET, "2", msg, sizeof msg), 0);
    int port = broker_port(&st->broker);
    int fds[2];
    for (int i = 0; i < 2; i++) {
        fds[i] = raw_connect(port, 5000);
        assert_true(fds[i] >= 0);
        struct raw_api_versions v;
        assert_int_equal(raw_api_versions(fds[i], 0, 30 + i, &v), 0);
    }
    int extra = raw_connect(port, 5000);
    assert_true(extra >= 0);
    if (!raw_wait_closed(extra, 5000)) {
        broker_print_log_tail(&st->broker, 20);
        fail_msg("a third connection from 127.0.0.1 stayed open with max.connections.per.ip=2");
    }
    close(extra);
    assert_true(broker_log_contains(&st->broker, "max.connections.per.ip (2) reached"));
    close(fds[0]);
    close(fds[1]);
    /* Lifting the limit (delete falls back to the default) admits again;
     * the request itself needs a connection, so retry until a slot frees. */
    int16_t code = -1;
    for (int i = 0; i < 100 && code != 0; i++) {
        int probe = raw_connect(port, 1000);
        bool open = probe >= 0 && !raw_wait_closed(probe, 200);
        if (probe >= 0)
            close(probe);
        if (open)
            code = incremental(&st->broker, "", "max.connections.per.ip", OP_DELETE, NULL, msg, sizeof msg);
        else
            usleep(50 * 1000);
    }
    assert_int_equal(code, 0);
    for (int i = 0; i < 3; i++) {
        fds[0] = raw_connect(port, 5000);
        struct raw_api_versions v;
        assert_int_equal(raw_api_versions(fds[0], 0, 40 + i, &v), 0);
        close(fds[0]);
    }
    broker_mark_passed(&st->broker);
}

static int dyn_setup(void **state)
{
    static struct dyn_state st;
    memset(&st, 0, sizeof st);
    *state = &st;
    const char *overrides[] = {"log.retention.hours=100", NULL};
    broker_start(&st.broker, overrides);
    const char *conf[] = {"linger.ms", "0", NULL};
    st.rk = rk_producer_new(broker_bootstrap(&st.broker), conf);
    return 0;
}

static int dyn_teardown(void **state)
{
    struct dyn_state *st = *state;
    if (st->rk)
        rk_producer_destroy(st->rk);
    broker_cleanup(&st->broker);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_message_max_bytes_at_runtime_and_after_restart),
        cmocka_unit_test(test_cluster_default_and_refusals),
        cmocka_unit_test(test_connection_limit_at_runtime),
    };
    return cmocka_run_group_tests(tests, dyn_setup, dyn_teardown);
}
