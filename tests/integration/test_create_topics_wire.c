/* CreateTopics byte by byte at the versions newer clients send (v7 from
 * @platformatic/kafka and the Java client): from v5 (KIP-525) the answer
 * carries the new topic's whole effective configuration, also for a
 * validate_only request, and older versions keep their own layout.
 * librdkafka 2.0.2 stops at v4, so raw requests are the only way to see it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "raw_kafka.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define API_CREATE_TOPICS 19
#define ERR_TOPIC_ALREADY_EXISTS 36
#define SOURCE_DYNAMIC_TOPIC_CONFIG 1
#define SOURCE_DEFAULT_CONFIG 5
#define MAX_CONFIGS 128
#define WIRE_TESTS 5
#define ERR_TOPIC_AUTHORIZATION_FAILED 29

/* Owned by the test's main thread. */
struct wire_state {
    struct test_broker broker;
    int32_t correlation;
    int passed;
};

struct created_config {
    char name[128];
    char value[128];
    bool value_null;
    int8_t read_only;
    int8_t source;
    int8_t sensitive;
};

/* One topic result as parsed from the answer. */
struct created_topic {
    int16_t error_code;
    int32_t num_partitions;
    int16_t replication_factor;
    int16_t topic_config_error_code;
    int configs_count; /* -1: null */
    struct created_config configs[MAX_CONFIGS];
};

struct request_config {
    const char *name;
    const char *value;
};

static void put_compact_array_len(struct raw_writer *w, int n)
{
    raw_put_uvarint(w, (uint64_t)n + 1);
}

/* Sends CreateTopics (version 4 or 5+) for one topic and parses the answer,
 * failing the test on any byte out of place, trailing bytes included. */
static void create_topic(struct wire_state *st, int16_t version, const char *topic, int32_t partitions,
                         const struct request_config *configs, int config_count, bool validate_only,
                         struct created_topic *out)
{
    bool flexible = version >= 5;
    int32_t correlation = ++st->correlation;
    struct raw_writer w;
    raw_writer_init(&w);
    if (flexible) {
        raw_frame_begin_flexible(&w, API_CREATE_TOPICS, version, correlation, "cairn-it");
        put_compact_array_len(&w, 1);
        raw_put_compact_string(&w, topic);
        raw_put_i32(&w, partitions);
        raw_put_i16(&w, -1);          /* replication factor: the broker's default */
        put_compact_array_len(&w, 0); /* assignments */
        put_compact_array_len(&w, config_count);
        for (int i = 0; i < config_count; i++) {
            raw_put_compact_string(&w, configs[i].name);
            raw_put_compact_string(&w, configs[i].value);
            raw_put_uvarint(&w, 0);
        }
        raw_put_uvarint(&w, 0); /* topic tagged fields */
    } else {
        raw_frame_begin(&w, API_CREATE_TOPICS, version, correlation, "cairn-it");
        raw_put_i32(&w, 1);
        raw_put_string(&w, topic);
        raw_put_i32(&w, partitions);
        raw_put_i16(&w, -1);
        raw_put_i32(&w, 0);
        raw_put_i32(&w, config_count);
        for (int i = 0; i < config_count; i++) {
            raw_put_string(&w, configs[i].name);
            raw_put_string(&w, configs[i].value);
        }
    }
    raw_put_i32(&w, 10000); /* timeout_ms */
    raw_put_i8(&w, validate_only ? 1 : 0);
    if (flexible)
        raw_put_uvarint(&w, 0);

    uint8_t *frame = NULL;
    struct raw_reader r;
    int rc = raw_exchange(broker_port(&st->broker), &w, correlation, flexible, 10000, &frame, &r);
    if (rc != 0) {
        free(frame);
        fail_msg("CreateTopics v%d: no answer (rc %d)", version, rc);
    }
    memset(out, 0, sizeof *out);
    out->num_partitions = -1;
    out->replication_factor = -1;
    out->configs_count = -1;
    raw_get_i32(&r); /* throttle */
    int64_t topics = flexible ? (int64_t)raw_get_uvarint(&r) - 1 : raw_get_i32(&r);
    char name[256];
    if (topics != 1) {
        free(frame);
        fail_msg("CreateTopics v%d: %lld topics in the answer", version, (long long)topics);
    }
    if (flexible) {
        raw_get_compact_string(&r, name, sizeof name);
        if (version >= 7)
            raw_skip(&r, 16); /* topic id */
        out->error_code = raw_get_i16(&r);
        raw_get_compact_string(&r, name, sizeof name); /* error message */
        out->num_partitions = raw_get_i32(&r);
        out->replication_factor = raw_get_i16(&r);
        int64_t n = (int64_t)raw_get_uvarint(&r) - 1;
        if (n > MAX_CONFIGS) {
            free(frame);
            fail_msg("CreateTopics v%d: %lld configs", version, (long long)n);
        }
        out->configs_count = (int)n;
        for (int64_t i = 0; i < n && !r.overflow; i++) {
            struct created_config *c = &out->configs[i];
            raw_get_compact_string(&r, c->name, sizeof c->name);
            c->value_null = !raw_get_compact_string(&r, c->value, sizeof c->value);
            c->read_only = raw_get_i8(&r);
            c->source = raw_get_i8(&r);
            c->sensitive = raw_get_i8(&r);
            raw_skip_tagged_fields(&r);
        }
        /* Topic tagged fields: tag 0 is topic_config_error_code. */
        uint64_t tags = raw_get_uvarint(&r);
        for (uint64_t i = 0; i < tags && !r.overflow; i++) {
            uint64_t tag = raw_get_uvarint(&r), size = raw_get_uvarint(&r);
            if (tag == 0 && size == 2)
                out->topic_config_error_code = raw_get_i16(&r);
            else
                raw_skip(&r, (size_t)size);
        }
        raw_skip_tagged_fields(&r); /* response tagged fields */
    } else {
        raw_skip_string(&r);
        out->error_code = raw_get_i16(&r);
        raw_skip_string(&r); /* error message (v1+) */
    }
    bool overflow = r.overflow;
    size_t left = r.len - r.pos;
    free(frame);
    if (overflow)
        fail_msg("CreateTopics v%d: answer shorter than its layout", version);
    if (left != 0)
        fail_msg("CreateTopics v%d: %zu bytes after the answer", version, left);
}

static const struct created_config *find_config(const struct created_topic *t, const char *name)
{
    for (int i = 0; i < t->configs_count; i++)
        if (strcmp(t->configs[i].name, name) == 0)
            return &t->configs[i];
    return NULL;
}

static void expect_config(const struct created_topic *t, const char *name, const char *value, int8_t source)
{
    const struct created_config *c = find_config(t, name);
    if (!c)
        fail_msg("%s missing from the CreateTopics answer", name);
    if (c->value_null || strcmp(c->value, value) != 0)
        fail_msg("%s = %s, expected %s", name, c->value_null ? "(null)" : c->value, value);
    if (c->source != source)
        fail_msg("%s: source %d, expected %d", name, c->source, source);
}

/* The whole effective configuration: every key once, sorted by name, none
 * read-only or sensitive, the request's keys as topic overrides. */
static void expect_effective_configs(const struct created_topic *t)
{
    assert_int_equal(t->topic_config_error_code, 0);
    if (t->configs_count < 20)
        fail_msg("only %d configs in the CreateTopics answer", t->configs_count);
    for (int i = 0; i < t->configs_count; i++) {
        if (i > 0 && strcmp(t->configs[i - 1].name, t->configs[i].name) >= 0)
            fail_msg("configs not sorted: %s before %s", t->configs[i - 1].name, t->configs[i].name);
        assert_int_equal(t->configs[i].read_only, 0);
        assert_int_equal(t->configs[i].sensitive, 0);
    }
    expect_config(t, "cleanup.policy", "compact", SOURCE_DYNAMIC_TOPIC_CONFIG);
    expect_config(t, "retention.ms", "1000", SOURCE_DYNAMIC_TOPIC_CONFIG);
    expect_config(t, "segment.bytes", "1073741824", SOURCE_DEFAULT_CONFIG);
    expect_config(t, "min.insync.replicas", "1", SOURCE_DEFAULT_CONFIG);
}

static const struct request_config overrides[] = {{"retention.ms", "1000"}, {"cleanup.policy", "compact"}};

static void test_v7_answers_effective_configs(void **state)
{
    struct wire_state *st = *state;
    struct created_topic t;
    create_topic(st, 7, "wire-configs", 3, overrides, 2, false, &t);
    assert_int_equal(t.error_code, 0);
    assert_int_equal(t.num_partitions, 3);
    assert_int_equal(t.replication_factor, 1);
    expect_effective_configs(&t);

    /* A topic that exists: an error and no configs. */
    create_topic(st, 7, "wire-configs", 3, overrides, 2, false, &t);
    assert_int_equal(t.error_code, ERR_TOPIC_ALREADY_EXISTS);
    assert_int_equal(t.num_partitions, -1);
    assert_true(t.configs_count <= 0);
    st->passed++;
}

static void test_validate_only_answers_configs_without_creating(void **state)
{
    struct wire_state *st = *state;
    struct created_topic t;
    create_topic(st, 7, "wire-dry-run", 2, overrides, 2, true, &t);
    assert_int_equal(t.error_code, 0);
    assert_int_equal(t.num_partitions, 2);
    expect_effective_configs(&t);
    /* Nothing was created: a real create of the same name succeeds. */
    create_topic(st, 5, "wire-dry-run", 2, overrides, 2, false, &t);
    assert_int_equal(t.error_code, 0);
    expect_effective_configs(&t);
    st->passed++;
}

static void test_defaults_without_overrides(void **state)
{
    struct wire_state *st = *state;
    struct created_topic t;
    create_topic(st, 6, "wire-defaults", 1, NULL, 0, false, &t);
    assert_int_equal(t.error_code, 0);
    assert_int_equal(t.topic_config_error_code, 0);
    expect_config(&t, "cleanup.policy", "delete", SOURCE_DEFAULT_CONFIG);
    expect_config(&t, "retention.ms", "604800000", SOURCE_DEFAULT_CONFIG);
    st->passed++;
}

static void test_v4_keeps_its_layout(void **state)
{
    struct wire_state *st = *state;
    struct created_topic t;
    create_topic(st, 4, "wire-v4", 1, overrides, 2, false, &t);
    assert_int_equal(t.error_code, 0);
    create_topic(st, 4, "wire-v4", 1, NULL, 0, false, &t);
    assert_int_equal(t.error_code, ERR_TOPIC_ALREADY_EXISTS);
    st->passed++;
}

/* With DESCRIBE_CONFIGS on the topic denied (the test authorizer denies
 * every operation on its deny list; CREATE on the cluster is allowed) the
 * topic is created but its configuration and counts are withheld. */
static void test_denied_describe_configs_withholds_configs(void **state)
{
    struct wire_state *st = *state;
    struct wire_state denied;
    memset(&denied, 0, sizeof denied);
    const char *ov[] = {"plugin.path=" TEST_PLUGIN_DIR, "plugins=test_authz",
                        "plugin.test_authz.deny.topics=wire-hidden", NULL};
    broker_start(&denied.broker, ov);
    struct created_topic t;
    create_topic(&denied, 7, "wire-hidden", 2, overrides, 2, false, &t);
    assert_int_equal(t.error_code, 0);
    assert_int_equal(t.topic_config_error_code, ERR_TOPIC_AUTHORIZATION_FAILED);
    assert_int_equal(t.num_partitions, -1);
    assert_int_equal(t.replication_factor, -1);
    assert_true(t.configs_count <= 0);
    create_topic(&denied, 7, "wire-open", 2, overrides, 2, false, &t);
    assert_int_equal(t.error_code, 0);
    assert_int_equal(t.num_partitions, 2);
    expect_effective_configs(&t);
    broker_stop(&denied.broker);
    broker_mark_passed(&denied.broker);
    broker_cleanup(&denied.broker);
    st->passed++;
}

static int wire_setup(void **state)
{
    static struct wire_state st;
    memset(&st, 0, sizeof st);
    broker_start(&st.broker, NULL);
    *state = &st;
    return 0;
}

static int wire_teardown(void **state)
{
    struct wire_state *st = *state;
    if (st->passed == WIRE_TESTS)
        broker_mark_passed(&st->broker);
    broker_stop(&st->broker);
    broker_cleanup(&st->broker);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v7_answers_effective_configs),
        cmocka_unit_test(test_validate_only_answers_configs_without_creating),
        cmocka_unit_test(test_defaults_without_overrides),
        cmocka_unit_test(test_v4_keeps_its_layout),
        cmocka_unit_test(test_denied_describe_configs_withholds_configs),
    };
    return cmocka_run_group_tests(tests, wire_setup, wire_teardown);
}
