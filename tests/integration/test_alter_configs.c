/* Topic config changes at runtime: AlterConfigs through librdkafka's admin
 * client, IncrementalAlterConfigs as raw requests (librdkafka 2.0.2 has no
 * call for it), and the partition log following a changed segment.bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "raw_kafka.h"
#include "rk_helpers.h"
#include "topic_configs.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ALTER_TESTS 3

/* Owned by the test's main thread. */
struct alter_state {
    struct test_broker broker;
    rd_kafka_t *rk; /* producer handle, also the admin client */
    int passed;
};

/* The value of one topic config (malloc()ed; "(null)" for a null value) and its source. */
static char *describe_topic_config(rd_kafka_t *rk, const char *topic, const char *name, rd_kafka_ConfigSource_t *source)
{
    rd_kafka_ConfigResource_t *cr = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
    rd_kafka_queue_t *queue = rd_kafka_queue_new(rk);
    rd_kafka_DescribeConfigs(rk, &cr, 1, NULL, queue);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(queue, 20000);
    if (!ev)
        fail_msg("DescribeConfigs %s: no answer in 20 s", topic);
    if (rd_kafka_event_error(ev))
        fail_msg("DescribeConfigs %s: %s", topic, rd_kafka_event_error_string(ev));
    size_t n = 0;
    const rd_kafka_ConfigResource_t **res = rd_kafka_DescribeConfigs_result_resources(
        rd_kafka_event_DescribeConfigs_result(ev), &n);
    if (n != 1 || rd_kafka_ConfigResource_error(res[0]))
        fail_msg("DescribeConfigs %s failed", topic);
    size_t count = 0;
    const rd_kafka_ConfigEntry_t **entries = rd_kafka_ConfigResource_configs(res[0], &count);
    char *value = NULL;
    for (size_t i = 0; i < count && !value; i++) {
        if (strcmp(rd_kafka_ConfigEntry_name(entries[i]), name) != 0)
            continue;
        const char *v = rd_kafka_ConfigEntry_value(entries[i]);
        value = strdup(v ? v : "(null)");
        *source = rd_kafka_ConfigEntry_source(entries[i]);
    }
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(queue);
    rd_kafka_ConfigResource_destroy(cr);
    if (!value)
        fail_msg("DescribeConfigs %s: no entry %s", topic, name);
    return value;
}

static void expect_config(rd_kafka_t *rk, const char *topic, const char *name, const char *want, bool dynamic)
{
    rd_kafka_ConfigSource_t source = RD_KAFKA_CONFIG_SOURCE_UNKNOWN_CONFIG;
    char *value = describe_topic_config(rk, topic, name, &source);
    if (strcmp(value, want) != 0)
        fail_msg("%s %s is %s, expected %s", topic, name, value, want);
    if (dynamic != (source == RD_KAFKA_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG))
        fail_msg("%s %s has source %s, expected %sa topic override", topic, name, rd_kafka_ConfigSource_name(source),
                 dynamic ? "" : "not ");
    free(value);
}

static int count_segments(const struct test_broker *b, const char *topic, int partition)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s-%d", b->data_dir, topic, partition);
    DIR *d = opendir(path);
    if (!d)
        fail_msg("no partition directory %s", path);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len > 4 && strcmp(e->d_name + len - 4, ".log") == 0)
            n++;
    }
    closedir(d);
    return n;
}

/* Produces `count` messages of 1000 bytes, one batch each. */
static void produce_separately(rd_kafka_t *rk, const char *topic, int count)
{
    char value[1000];
    memset(value, 'v', sizeof value);
    for (int i = 0; i < count; i++) {
        rd_kafka_resp_err_t err = rk_produce_blocking(rk, topic, 0, NULL, 0, value, sizeof value, 0, NULL, NULL);
        if (err)
            fail_msg("produce: %s", rd_kafka_err2str(err));
        if (rd_kafka_flush(rk, 10000) != RD_KAFKA_RESP_ERR_NO_ERROR)
            fail_msg("flush timed out");
    }
}

static void test_alter_configs_reaches_the_log(void **state)
{
    struct alter_state *st = *state;
    const char *topic = "alt-segments";
    rk_create_topic(broker_bootstrap(&st->broker), topic, 1, NULL);
    produce_separately(st->rk, topic, 10);
    assert_int_equal(count_segments(&st->broker, topic, 0), 1);

    char err[512];
    struct alter_kv set[] = {{"segment.bytes", "4096"}, {"retention.ms", "3600000"}};
    rd_kafka_resp_err_t rc = alter_topic_configs(st->rk, topic, set, 2, false, err, sizeof err);
    if (rc)
        fail_msg("AlterConfigs: %s (%s)", rd_kafka_err2name(rc), err);
    expect_config(st->rk, topic, "segment.bytes", "4096", true);
    expect_config(st->rk, topic, "retention.ms", "3600000", true);

    /* The open log rolls by the new size: ~1 KB batches, 4 KB segments. */
    produce_separately(st->rk, topic, 12);
    int segments = count_segments(&st->broker, topic, 0);
    if (segments < 3)
        fail_msg("%d segment(s) after segment.bytes=4096, expected several", segments);

    /* AlterConfigs replaces the whole set: retention.ms goes back to its default. */
    struct alter_kv only_segment[] = {{"segment.bytes", "8192"}};
    rc = alter_topic_configs(st->rk, topic, only_segment, 1, false, err, sizeof err);
    if (rc)
        fail_msg("AlterConfigs: %s (%s)", rd_kafka_err2name(rc), err);
    expect_config(st->rk, topic, "segment.bytes", "8192", true);
    expect_config(st->rk, topic, "retention.ms", "604800000", false);

    /* After a restart the logs loaded from disk take the topic's configs too. */
    broker_stop(&st->broker);
    broker_restart(&st->broker);
    int before = count_segments(&st->broker, topic, 0);
    produce_separately(st->rk, topic, 20);
    int after = count_segments(&st->broker, topic, 0);
    if (after < before + 2)
        fail_msg("%d segment(s) before, %d after a restart with segment.bytes=8192", before, after);
    st->passed++;
}

static void test_alter_configs_errors(void **state)
{
    struct alter_state *st = *state;
    const char *topic = "alt-errors";
    rk_create_topic(broker_bootstrap(&st->broker), topic, 1, NULL);
    char err[512];
    struct alter_kv unknown[] = {{"no.such.config", "1"}};
    rd_kafka_resp_err_t rc = alter_topic_configs(st->rk, topic, unknown, 1, false, err, sizeof err);
    if (rc != RD_KAFKA_RESP_ERR_INVALID_CONFIG)
        fail_msg("unknown key: got %s (%s)", rd_kafka_err2name(rc), err);

    struct alter_kv bad_value[] = {{"retention.ms", "soon"}};
    rc = alter_topic_configs(st->rk, topic, bad_value, 1, false, err, sizeof err);
    if (rc != RD_KAFKA_RESP_ERR_INVALID_CONFIG)
        fail_msg("bad value: got %s (%s)", rd_kafka_err2name(rc), err);
    if (!strstr(err, "retention.ms"))
        fail_msg("bad value: message '%s' does not name the key", err);

    struct alter_kv fine[] = {{"retention.ms", "5000"}};
    rc = alter_topic_configs(st->rk, "alt-no-such-topic", fine, 1, false, err, sizeof err);
    if (rc != RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
        fail_msg("unknown topic: got %s (%s)", rd_kafka_err2name(rc), err);

    /* A key given twice takes its last value (librdkafka's suite does this). */
    struct alter_kv twice[] = {
        {"message.format.version", "3.0-IV1"}, {"retention.ms", "1000"}, {"message.format.version", "0.10.0.0"}};
    rc = alter_topic_configs(st->rk, topic, twice, 3, false, err, sizeof err);
    if (rc)
        fail_msg("key given twice: %s (%s)", rd_kafka_err2name(rc), err);
    expect_config(st->rk, topic, "message.format.version", "0.10.0.0", true);
    struct alter_kv none[] = {{"retention.ms", NULL}};
    rc = alter_topic_configs(st->rk, topic, none, 0, false, err, sizeof err);
    if (rc)
        fail_msg("empty AlterConfigs: %s (%s)", rd_kafka_err2name(rc), err);
    expect_config(st->rk, topic, "message.format.version", "3.0-IV1", false);

    /* validate_only checks but changes nothing. */
    rc = alter_topic_configs(st->rk, topic, fine, 1, true, err, sizeof err);
    if (rc)
        fail_msg("validate only: %s (%s)", rd_kafka_err2name(rc), err);
    expect_config(st->rk, topic, "retention.ms", "604800000", false);
    st->passed++;
}

/* One IncrementalAlterConfigs resource setting `name` twice: refused whole
 * with INVALID_REQUEST (unlike AlterConfigs, where the last value wins). */
static void expect_duplicate_keys_refused(struct alter_state *st, const char *topic)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 44, 0, 9, "cairn-it");
    raw_put_i32(&w, 1);
    raw_put_i8(&w, 2);
    raw_put_string(&w, topic);
    raw_put_i32(&w, 2);
    for (int i = 0; i < 2; i++) {
        raw_put_string(&w, "retention.ms");
        raw_put_i8(&w, 0);
        raw_put_string(&w, i == 0 ? "1000" : "2000");
    }
    raw_put_i8(&w, 0);
    uint8_t *frame = NULL;
    struct raw_reader r;
    assert_int_equal(raw_exchange(broker_port(&st->broker), &w, 9, false, 5000, &frame, &r), 0);
    raw_get_i32(&r);
    assert_int_equal(raw_get_i32(&r), 1);
    assert_int_equal(raw_get_i16(&r), 42); /* INVALID_REQUEST */
    assert_false(r.overflow);
    free(frame);
}

/* The same topic named twice in one request: both answers are INVALID_REQUEST. */
static void expect_duplicate_resources_refused(struct alter_state *st, const char *topic)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 44, 0, 8, "cairn-it");
    raw_put_i32(&w, 2);
    for (int i = 0; i < 2; i++) {
        raw_put_i8(&w, 2);
        raw_put_string(&w, topic);
        raw_put_i32(&w, 1);
        raw_put_string(&w, "retention.ms");
        raw_put_i8(&w, 0);
        raw_put_string(&w, "1000");
    }
    raw_put_i8(&w, 0);
    uint8_t *frame = NULL;
    struct raw_reader r;
    assert_int_equal(raw_exchange(broker_port(&st->broker), &w, 8, false, 5000, &frame, &r), 0);
    raw_get_i32(&r);
    assert_int_equal(raw_get_i32(&r), 2);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(raw_get_i16(&r), 42); /* INVALID_REQUEST */
        raw_skip_string(&r);
        raw_get_i8(&r);
        raw_skip_string(&r);
    }
    assert_false(r.overflow);
    free(frame);
}

static void expect_incremental(struct alter_state *st, const char *topic, const char *name, int8_t op,
                               const char *value, int16_t want)
{
    char msg[512];
    int16_t got = incremental_alter(broker_port(&st->broker), topic, name, op, value, msg, sizeof msg);
    if (got != want)
        fail_msg("IncrementalAlterConfigs %s op %d %s=%s: error %d (%s), expected %d", topic, op, name,
                 value ? value : "null", got, msg, want);
}

static void test_incremental_alter_configs(void **state)
{
    struct alter_state *st = *state;
    const char *topic = "alt-incremental";
    rk_create_topic(broker_bootstrap(&st->broker), topic, 1, NULL);
    enum { SET = 0, DELETE = 1, APPEND = 2, SUBTRACT = 3 };
    expect_incremental(st, topic, "retention.ms", SET, "7200000", 0);
    expect_config(st->rk, topic, "retention.ms", "7200000", true);
    /* Incremental: setting one key keeps the others. */
    expect_incremental(st, topic, "segment.bytes", SET, "1048576", 0);
    expect_config(st->rk, topic, "retention.ms", "7200000", true);

    expect_incremental(st, topic, "cleanup.policy", APPEND, "compact", 0);
    expect_config(st->rk, topic, "cleanup.policy", "delete,compact", true);
    expect_incremental(st, topic, "cleanup.policy", SUBTRACT, "delete", 0);
    expect_config(st->rk, topic, "cleanup.policy", "compact", true);

    expect_incremental(st, topic, "retention.ms", DELETE, NULL, 0);
    expect_config(st->rk, topic, "retention.ms", "604800000", false);
    expect_config(st->rk, topic, "segment.bytes", "1048576", true);

    expect_incremental(st, topic, "retention.ms", APPEND, "5", 40);    /* INVALID_CONFIG: not a list */
    expect_incremental(st, topic, "no.such.config", SET, "1", 40);     /* INVALID_CONFIG */
    expect_incremental(st, topic, "retention.ms", SET, "-5", 40);      /* below -1 */
    expect_incremental(st, topic, "retention.ms", 9, "5", 42);         /* INVALID_REQUEST: unknown op */
    expect_incremental(st, "alt-absent", "retention.ms", SET, "5", 3); /* UNKNOWN_TOPIC_OR_PARTITION */
    expect_duplicate_resources_refused(st, topic);
    expect_duplicate_keys_refused(st, topic);
    expect_config(st->rk, topic, "retention.ms", "604800000", false); /* unchanged */
    st->passed++;
}

static int alter_setup(void **state)
{
    static struct alter_state st;
    memset(&st, 0, sizeof st);
    *state = &st;
    broker_start(&st.broker, NULL);
    const char *conf[] = {"linger.ms", "0", NULL};
    st.rk = rk_producer_new(broker_bootstrap(&st.broker), conf);
    return 0;
}

static int alter_teardown(void **state)
{
    struct alter_state *st = *state;
    if (st->rk)
        rk_producer_destroy(st->rk);
    if (st->passed == ALTER_TESTS)
        broker_mark_passed(&st->broker);
    broker_cleanup(&st->broker);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alter_configs_reaches_the_log),
        cmocka_unit_test(test_alter_configs_errors),
        cmocka_unit_test(test_incremental_alter_configs),
    };
    return cmocka_run_group_tests(tests, alter_setup, alter_teardown);
}
