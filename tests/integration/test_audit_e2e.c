/* Audit end to end: cairnd with the SDK's prefix_authorizer and the audit
 * plugin, driven by librdkafka (and one raw ListOffsets). For each request
 * type, allowed and denied, the test checks the client's outcome and finds
 * the audit line that matches it: principal, client id, resource,
 * operation, decision, and for ADMIN events the Kafka error code.
 *
 * Grants: topics ok-* everything; ro-* create and describe only; hid-*
 * create only; groups g-ok* everything; nothing else. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "raw_kafka.h"
#include "rk_helpers.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* g-no-* groups may be described (FindCoordinator) but not read, so the
 * denials land on JoinGroup and OffsetCommit. */
#define E2E_ALLOW "User:ANON=topic:ok-,topic:ro-@create|describe,topic:hid-@create,group:g-ok,group:g-no-@describe"

/* Owned by the test's main thread. */
struct e2e_state {
    struct test_broker broker;
    char audit_path[700];
    json_t *events[8192];
    size_t count;
};

static rd_kafka_t *e2e_client(struct e2e_state *st, const char *client_id)
{
    const char *conf[] = {"client.id", client_id, "message.timeout.ms", "8000", NULL};
    return rk_producer_new(broker_bootstrap(&st->broker), conf);
}

static rd_kafka_resp_err_t e2e_create(rd_kafka_t *rk, const char *topic)
{
    char errstr[256];
    return rk_create_topic_result(rk, topic, 1, 1, NULL, false, errstr, sizeof errstr);
}

static rd_kafka_resp_err_t e2e_admin_result(rd_kafka_t *rk, rd_kafka_queue_t *queue, bool configs)
{
    rd_kafka_event_t *ev = rd_kafka_queue_poll(queue, 20000);
    if (!ev)
        return RD_KAFKA_RESP_ERR__TIMED_OUT;
    rd_kafka_resp_err_t err = rd_kafka_event_error(ev);
    size_t n = 0;
    if (!err && configs) {
        const rd_kafka_ConfigResource_t **res = rd_kafka_AlterConfigs_result_resources(
            rd_kafka_event_AlterConfigs_result(ev), &n);
        err = n == 1 ? rd_kafka_ConfigResource_error(res[0]) : RD_KAFKA_RESP_ERR__BAD_MSG;
    } else if (!err) {
        const rd_kafka_topic_result_t **t = rd_kafka_DeleteTopics_result_topics(rd_kafka_event_DeleteTopics_result(ev),
                                                                                &n);
        err = n == 1 ? rd_kafka_topic_result_error(t[0]) : RD_KAFKA_RESP_ERR__BAD_MSG;
    }
    rd_kafka_event_destroy(ev);
    (void)rk;
    return err;
}

static rd_kafka_resp_err_t e2e_delete(rd_kafka_t *rk, const char *topic)
{
    rd_kafka_DeleteTopic_t *dt = rd_kafka_DeleteTopic_new(topic);
    rd_kafka_queue_t *queue = rd_kafka_queue_new(rk);
    rd_kafka_DeleteTopics(rk, &dt, 1, NULL, queue);
    rd_kafka_resp_err_t err = e2e_admin_result(rk, queue, false);
    rd_kafka_queue_destroy(queue);
    rd_kafka_DeleteTopic_destroy(dt);
    return err;
}

static rd_kafka_resp_err_t e2e_alter_configs(rd_kafka_t *rk, const char *topic)
{
    rd_kafka_ConfigResource_t *cr = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
    rd_kafka_ConfigResource_set_config(cr, "retention.ms", "3600000");
    rd_kafka_queue_t *queue = rd_kafka_queue_new(rk);
    rd_kafka_AlterConfigs(rk, &cr, 1, NULL, queue);
    rd_kafka_resp_err_t err = e2e_admin_result(rk, queue, true);
    rd_kafka_queue_destroy(queue);
    rd_kafka_ConfigResource_destroy(cr);
    return err;
}

/* Legacy consumer on partition 0: the first message's error, 0 for a record. */
static rd_kafka_resp_err_t e2e_fetch(struct e2e_state *st, const char *topic)
{
    const char *conf[] = {"client.id", "e2e-fetcher", NULL};
    rd_kafka_t *rk = rk_consumer_new(broker_bootstrap(&st->broker), conf);
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    assert_int_equal(rd_kafka_consume_start(rkt, 0, RD_KAFKA_OFFSET_BEGINNING), 0);
    rd_kafka_resp_err_t result = RD_KAFKA_RESP_ERR__TIMED_OUT;
    for (long long end = harness_now_ms() + 8000; harness_now_ms() < end && result == RD_KAFKA_RESP_ERR__TIMED_OUT;) {
        rd_kafka_message_t *m = rd_kafka_consume(rkt, 0, 200);
        if (!m)
            continue;
        if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
            result = m->err;
        rd_kafka_message_destroy(m);
    }
    rd_kafka_consume_stop(rkt, 0);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    return result;
}

/* ListOffsets v1 for (topic, 0, latest) as raw bytes: librdkafka would stop
 * at Metadata for a topic it may not describe. Returns the partition error. */
static int e2e_raw_list_offsets(struct e2e_state *st, const char *topic)
{
    int fd = raw_connect(broker_port(&st->broker), 5000);
    assert_true(fd >= 0);
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 2, 1, 7, "e2e-raw");
    raw_put_i32(&w, -1); /* replica id */
    raw_put_i32(&w, 1);
    raw_put_string(&w, topic);
    raw_put_i32(&w, 1);
    raw_put_i32(&w, 0);  /* partition */
    raw_put_i64(&w, -1); /* latest */
    raw_frame_finish(&w);
    assert_int_equal(raw_send_all(fd, w.data, w.len), 0);
    raw_writer_free(&w);
    uint8_t *frame = NULL;
    size_t len = 0;
    assert_int_equal(raw_recv_frame(fd, 5000, 1 << 20, &frame, &len), 0);
    close(fd);
    struct raw_reader r;
    raw_reader_init(&r, frame, len);
    assert_int_equal(raw_get_i32(&r), 7);
    assert_int_equal(raw_get_i32(&r), 1);
    raw_skip_string(&r);
    assert_int_equal(raw_get_i32(&r), 1);
    assert_int_equal(raw_get_i32(&r), 0);
    int error = raw_get_i16(&r);
    assert_false(r.overflow);
    free(frame);
    return error;
}

/* Group consumer: subscribe, read one record, commit it synchronously.
 * Returns the first error seen (join or commit), 0 when all went well. */
static rd_kafka_resp_err_t e2e_group_consume(struct e2e_state *st, const char *group, const char *topic)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char errstr[256];
    const char *kv[] = {"bootstrap.servers",
                        broker_bootstrap(&st->broker),
                        "group.id",
                        group,
                        "client.id",
                        "e2e-group",
                        "auto.offset.reset",
                        "earliest",
                        "enable.auto.commit",
                        "false",
                        "session.timeout.ms",
                        "6000",
                        NULL};
    for (int i = 0; kv[i]; i += 2)
        assert_int_equal(rd_kafka_conf_set(conf, kv[i], kv[i + 1], errstr, sizeof errstr), 0);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    assert_non_null(rk);
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(topics, topic, RD_KAFKA_PARTITION_UA);
    assert_int_equal(rd_kafka_subscribe(rk, topics), 0);
    rd_kafka_topic_partition_list_destroy(topics);
    rd_kafka_resp_err_t result = RD_KAFKA_RESP_ERR__TIMED_OUT;
    for (long long end = harness_now_ms() + 15000; harness_now_ms() < end && result == RD_KAFKA_RESP_ERR__TIMED_OUT;) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
        if (!m)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
            result = rd_kafka_commit_message(rk, m, 0);
        } else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            result = m->err;
        }
        rd_kafka_message_destroy(m);
    }
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return result;
}

/* OffsetCommit outside any generation (a consumer that never joined):
 * returns the partition's error. */
static rd_kafka_resp_err_t e2e_commit_only(struct e2e_state *st, const char *group, const char *topic)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char errstr[256];
    const char *kv[] = {"bootstrap.servers", broker_bootstrap(&st->broker), "group.id", group, "client.id",
                        "e2e-committer",     "enable.auto.commit",          "false",    NULL};
    for (int i = 0; kv[i]; i += 2)
        assert_int_equal(rd_kafka_conf_set(conf, kv[i], kv[i + 1], errstr, sizeof errstr), 0);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    assert_non_null(rk);
    rd_kafka_topic_partition_list_t *offsets = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(offsets, topic, 0)->offset = 1;
    rd_kafka_resp_err_t err = rd_kafka_commit(rk, offsets, 0);
    if (!err)
        err = offsets->elems[0].err;
    rd_kafka_topic_partition_list_destroy(offsets);
    rd_kafka_destroy(rk);
    return err;
}

static void e2e_load_events(struct e2e_state *st)
{
    FILE *f = fopen(st->audit_path, "r");
    if (!f)
        fail_msg("no audit log at %s", st->audit_path);
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0 && st->count < sizeof st->events / sizeof st->events[0]) {
        json_error_t error;
        st->events[st->count] = json_loads(line, 0, &error);
        if (!st->events[st->count])
            fail_msg("audit line is not JSON: %s", line);
        st->count++;
    }
    free(line);
    fclose(f);
}

static bool e2e_str_is(json_t *e, const char *key, const char *want)
{
    const char *v = json_string_value(json_object_get(e, key));
    return v && strcmp(v, want) == 0;
}

/* Fails unless one event has the type, api, client id, operation, resource
 * and outcome given (decision for authorization, error code for admin). */
static void e2e_expect(struct e2e_state *st, const char *type, const char *api, const char *client_id,
                       const char *operation, const char *resource_type, const char *resource, const char *decision,
                       int error_code)
{
    for (size_t i = 0; i < st->count; i++) {
        json_t *e = st->events[i];
        if (!e2e_str_is(e, "type", type) || !e2e_str_is(e, "api_name", api) || !e2e_str_is(e, "operation", operation) ||
            !e2e_str_is(e, "resource_type", resource_type) || !e2e_str_is(e, "resource_name", resource) ||
            !e2e_str_is(e, "principal", "User:ANONYMOUS") || !e2e_str_is(e, "client_id", client_id))
            continue;
        if (decision && !e2e_str_is(e, "decision", decision))
            continue;
        if (!decision && json_integer_value(json_object_get(e, "error_code")) != error_code)
            continue;
        return;
    }
    for (size_t i = 0; i < st->count; i++) {
        char *text = json_dumps(st->events[i], JSON_COMPACT);
        fprintf(stderr, "  %s\n", text);
        free(text);
    }
    fail_msg("no %s event: api=%s client_id=%s operation=%s resource=%s:%s %s=%s/%d", type, api, client_id, operation,
             resource_type, resource, decision ? "decision" : "error_code", decision ? decision : "", error_code);
}

static void test_audit_lines_match_requests(void **state)
{
    struct e2e_state *st = *state;
    char path_kv[1400], file_kv[800];
    snprintf(path_kv, sizeof path_kv, "plugin.path=%s:%s", CAIRN_PLUGIN_DIR, TEST_PLUGIN_DIR);
    snprintf(st->audit_path, sizeof st->audit_path, "/tmp/cairn-audit-e2e-%d.log", (int)getpid());
    remove(st->audit_path);
    snprintf(file_kv, sizeof file_kv, "plugin.audit.file.path=%s", st->audit_path);
    const char *ov[] = {path_kv, "plugins=prefix_authorizer,audit",    "plugin.prefix_authorizer.allow=" E2E_ALLOW,
                        file_kv, "offsets.topic.replication.factor=1", NULL};
    broker_start(&st->broker, ov);

    rd_kafka_t *admin = e2e_client(st, "e2e-admin");
    assert_int_equal(e2e_create(admin, "ok-t"), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(e2e_create(admin, "ok-t"), RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS);
    assert_int_equal(e2e_create(admin, "ok-del"), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(e2e_create(admin, "ro-t"), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(e2e_create(admin, "hid-t"), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(e2e_create(admin, "no-t"), RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
    assert_true(rk_wait_topic(admin, "ok-t", 1, 10000));
    assert_int_equal(e2e_alter_configs(admin, "ok-t"), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(e2e_alter_configs(admin, "ro-t"), RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
    assert_int_equal(e2e_delete(admin, "ok-del"), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(e2e_delete(admin, "ro-t"), RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
    rk_producer_destroy(admin);

    rd_kafka_t *producer = e2e_client(st, "e2e-producer");
    assert_int_equal(rk_produce_one_delivered(producer, "ok-t"), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(rk_produce_one_delivered(producer, "ro-t"), RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
    assert_int_not_equal(rk_produce_one_delivered(producer, "no-t"), RD_KAFKA_RESP_ERR_NO_ERROR);
    int64_t low = -1, high = -1;
    assert_int_equal(rd_kafka_query_watermark_offsets(producer, "ok-t", 0, &low, &high, 10000), 0);
    assert_int_equal(high, 1);
    rk_producer_destroy(producer);

    assert_int_equal(e2e_fetch(st, "ok-t"), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(e2e_fetch(st, "ro-t"), RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
    assert_int_equal(e2e_raw_list_offsets(st, "hid-t"), RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);

    assert_int_equal(e2e_group_consume(st, "g-ok-1", "ok-t"), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(e2e_group_consume(st, "g-no-1", "ok-t"), RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED);
    assert_int_equal(e2e_commit_only(st, "g-ok-2", "ro-t"), RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
    assert_int_equal(e2e_commit_only(st, "g-no-2", "ok-t"), RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED);

    broker_stop(&st->broker); /* the audit plugin writes every queued line at fini */
    e2e_load_events(st);

    /* CreateTopics */
    e2e_expect(st, "authorization", "CreateTopics", "e2e-admin", "CREATE", "TOPIC", "ok-t", "allowed", 0);
    e2e_expect(st, "admin", "CreateTopics", "e2e-admin", "CreateTopics", "TOPIC", "ok-t", NULL, 0);
    e2e_expect(st, "admin", "CreateTopics", "e2e-admin", "CreateTopics", "TOPIC", "ok-t", NULL,
               RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS);
    e2e_expect(st, "authorization", "CreateTopics", "e2e-admin", "CREATE", "TOPIC", "no-t", "denied", 0);
    /* AlterConfigs */
    e2e_expect(st, "authorization", "AlterConfigs", "e2e-admin", "ALTER_CONFIGS", "TOPIC", "ok-t", "allowed", 0);
    e2e_expect(st, "admin", "AlterConfigs", "e2e-admin", "AlterConfigs", "TOPIC", "ok-t", NULL, 0);
    e2e_expect(st, "authorization", "AlterConfigs", "e2e-admin", "ALTER_CONFIGS", "TOPIC", "ro-t", "denied", 0);
    /* DeleteTopics */
    e2e_expect(st, "authorization", "DeleteTopics", "e2e-admin", "DELETE", "TOPIC", "ok-del", "allowed", 0);
    e2e_expect(st, "admin", "DeleteTopics", "e2e-admin", "DeleteTopics", "TOPIC", "ok-del", NULL, 0);
    e2e_expect(st, "authorization", "DeleteTopics", "e2e-admin", "DELETE", "TOPIC", "ro-t", "denied", 0);
    /* Metadata, Produce, ListOffsets */
    e2e_expect(st, "authorization", "Metadata", "e2e-producer", "DESCRIBE", "TOPIC", "ok-t", "allowed", 0);
    e2e_expect(st, "authorization", "Metadata", "e2e-producer", "DESCRIBE", "TOPIC", "no-t", "denied", 0);
    e2e_expect(st, "authorization", "Produce", "e2e-producer", "WRITE", "TOPIC", "ok-t", "allowed", 0);
    e2e_expect(st, "authorization", "Produce", "e2e-producer", "WRITE", "TOPIC", "ro-t", "denied", 0);
    e2e_expect(st, "authorization", "ListOffsets", "e2e-producer", "DESCRIBE", "TOPIC", "ok-t", "allowed", 0);
    e2e_expect(st, "authorization", "ListOffsets", "e2e-raw", "DESCRIBE", "TOPIC", "hid-t", "denied", 0);
    /* Fetch */
    e2e_expect(st, "authorization", "Fetch", "e2e-fetcher", "READ", "TOPIC", "ok-t", "allowed", 0);
    e2e_expect(st, "authorization", "Fetch", "e2e-fetcher", "READ", "TOPIC", "ro-t", "denied", 0);
    /* Groups */
    e2e_expect(st, "authorization", "JoinGroup", "e2e-group", "READ", "GROUP", "g-ok-1", "allowed", 0);
    e2e_expect(st, "authorization", "OffsetCommit", "e2e-group", "READ", "GROUP", "g-ok-1", "allowed", 0);
    e2e_expect(st, "authorization", "OffsetCommit", "e2e-group", "READ", "TOPIC", "ok-t", "allowed", 0);
    e2e_expect(st, "authorization", "FindCoordinator", "e2e-group", "DESCRIBE", "GROUP", "g-no-1", "allowed", 0);
    e2e_expect(st, "authorization", "JoinGroup", "e2e-group", "READ", "GROUP", "g-no-1", "denied", 0);
    e2e_expect(st, "authorization", "OffsetCommit", "e2e-committer", "READ", "GROUP", "g-ok-2", "allowed", 0);
    e2e_expect(st, "authorization", "OffsetCommit", "e2e-committer", "READ", "TOPIC", "ro-t", "denied", 0);
    e2e_expect(st, "authorization", "OffsetCommit", "e2e-committer", "READ", "GROUP", "g-no-2", "denied", 0);
    remove(st->audit_path);
    broker_mark_passed(&st->broker);
}

static int e2e_setup(void **state)
{
    static struct e2e_state st;
    memset(&st, 0, sizeof st);
    *state = &st;
    return 0;
}

static int e2e_teardown(void **state)
{
    struct e2e_state *st = *state;
    for (size_t i = 0; i < st->count; i++)
        json_decref(st->events[i]);
    broker_cleanup(&st->broker);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_audit_lines_match_requests),
    };
    return cmocka_run_group_tests(tests, e2e_setup, e2e_teardown);
}
