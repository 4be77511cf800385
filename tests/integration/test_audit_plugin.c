/* The audit plugin in a real cairnd: topic creation and deletion through
 * librdkafka's admin API end up as admin events in the JSON Lines file,
 * written out completely by the SIGTERM shutdown. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "rk_helpers.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define AUDIT_IT_CLIENT_ID "audit-it-client"

/* Owned by the test's main thread. */
struct audit_it_state {
    struct test_broker broker;
    char dir[256];
    char log_path[320];
};

static rd_kafka_resp_err_t audit_it_delete_topic(rd_kafka_t *rk, const char *topic)
{
    rd_kafka_DeleteTopic_t *dt = rd_kafka_DeleteTopic_new(topic);
    rd_kafka_queue_t *queue = rd_kafka_queue_new(rk);
    rd_kafka_DeleteTopics(rk, &dt, 1, NULL, queue);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(queue, 20000);
    rd_kafka_resp_err_t result;
    if (!ev) {
        result = RD_KAFKA_RESP_ERR__TIMED_OUT;
    } else if (rd_kafka_event_error(ev)) {
        result = rd_kafka_event_error(ev);
    } else {
        size_t n = 0;
        const rd_kafka_topic_result_t **topics = rd_kafka_DeleteTopics_result_topics(
            rd_kafka_event_DeleteTopics_result(ev), &n);
        result = n == 1 ? rd_kafka_topic_result_error(topics[0]) : RD_KAFKA_RESP_ERR__BAD_MSG;
    }
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(queue);
    rd_kafka_DeleteTopic_destroy(dt);
    return result;
}

/* Finds the admin event for (operation, topic, error_code); fails the
 * test when there is none. */
static json_t *audit_it_find(json_t *const *events, size_t count, const char *operation, const char *topic,
                             int error_code)
{
    for (size_t i = 0; i < count; i++) {
        json_t *e = events[i];
        const char *type = json_string_value(json_object_get(e, "type"));
        const char *op = json_string_value(json_object_get(e, "operation"));
        const char *name = json_string_value(json_object_get(e, "resource_name"));
        json_t *code = json_object_get(e, "error_code");
        if (type && strcmp(type, "admin") == 0 && op && strcmp(op, operation) == 0 && name &&
            strcmp(name, topic) == 0 && json_is_integer(code) && json_integer_value(code) == error_code)
            return e;
    }
    fail_msg("no admin event %s on %s with error code %d among %zu events", operation, topic, error_code, count);
    return NULL;
}

static void audit_it_check_event(json_t *event, const char *api_name)
{
    assert_string_equal(json_string_value(json_object_get(event, "principal")), "User:ANONYMOUS");
    assert_string_equal(json_string_value(json_object_get(event, "client_id")), AUDIT_IT_CLIENT_ID);
    assert_string_equal(json_string_value(json_object_get(event, "api_name")), api_name);
    assert_string_equal(json_string_value(json_object_get(event, "resource_type")), "TOPIC");
    assert_string_equal(json_string_value(json_object_get(event, "listener")), "PLAINTEXT");
    assert_string_equal(json_string_value(json_object_get(event, "security_protocol")), "PLAINTEXT");
    const char *client = json_string_value(json_object_get(event, "client"));
    assert_non_null(client);
    assert_true(strncmp(client, "127.0.0.1:", 10) == 0);
    const char *time = json_string_value(json_object_get(event, "time"));
    assert_non_null(time);
    assert_int_equal(strlen(time), strlen("2026-01-01T00:00:00.000Z"));
}

static void test_admin_events_reach_the_file(void **state)
{
    struct audit_it_state *st = *state;
    char plugin_path[600], file_path[400];
    snprintf(plugin_path, sizeof(plugin_path), "plugin.path=%s", CAIRN_PLUGIN_DIR);
    snprintf(file_path, sizeof(file_path), "plugin.audit.file.path=%s", st->log_path);
    const char *overrides[] = {plugin_path, "plugins=audit", file_path, NULL};
    broker_start(&st->broker, overrides);

    const char *conf[] = {"client.id", AUDIT_IT_CLIENT_ID, NULL};
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(&st->broker), conf);
    char errstr[512];
    rd_kafka_resp_err_t err = rk_create_topic_result(rk, "audited", 3, 1, NULL, false, errstr, sizeof(errstr));
    if (err)
        fail_msg("CreateTopics audited: %s (%s)", rd_kafka_err2name(err), errstr);
    assert_true(rk_wait_topic(rk, "audited", 3, 10000));
    err = rk_create_topic_result(rk, "audited", 3, 1, NULL, false, errstr, sizeof(errstr));
    assert_int_equal(err, RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS);
    err = audit_it_delete_topic(rk, "audited");
    if (err)
        fail_msg("DeleteTopics audited: %s", rd_kafka_err2name(err));
    long long deadline = harness_now_ms() + 10000;
    while ((err = audit_it_delete_topic(rk, "audited")) == RD_KAFKA_RESP_ERR_NO_ERROR && harness_now_ms() < deadline)
        usleep(100000);
    assert_int_equal(err, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
    /* A refused broker password change is audited without its value. */
    rd_kafka_ConfigResource_t *cr = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_BROKER, "1");
    rd_kafka_ConfigResource_set_config(cr, "ssl.key.password", "s3cret-value");
    rd_kafka_queue_t *queue = rd_kafka_queue_new(rk);
    rd_kafka_AlterConfigs(rk, &cr, 1, NULL, queue);
    rd_kafka_event_destroy(rk_admin_result(queue, RD_KAFKA_EVENT_ALTERCONFIGS_RESULT, 20000));
    rd_kafka_queue_destroy(queue);
    rd_kafka_ConfigResource_destroy(cr);
    rk_producer_destroy(rk);

    /* SIGTERM: fini must write every queued event before the exit. */
    broker_stop(&st->broker);

    FILE *f = fopen(st->log_path, "r");
    if (!f)
        fail_msg("no audit log at %s: %s", st->log_path, strerror(errno));
    json_t *events[4096];
    size_t count = 0;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0 && count < sizeof(events) / sizeof(events[0])) {
        json_error_t error;
        events[count] = json_loads(line, 0, &error);
        if (!events[count])
            fail_msg("audit line %zu is not JSON: %s (%s)", count + 1, line, error.text);
        count++;
    }
    free(line);
    fclose(f);

    audit_it_check_event(audit_it_find(events, count, "CreateTopics", "audited", 0), "CreateTopics");
    audit_it_check_event(
        audit_it_find(events, count, "CreateTopics", "audited", RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS),
        "CreateTopics");
    audit_it_check_event(audit_it_find(events, count, "DeleteTopics", "audited", 0), "DeleteTopics");
    audit_it_check_event(
        audit_it_find(events, count, "DeleteTopics", "audited", RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART),
        "DeleteTopics");
    bool password_event = false;
    for (size_t i = 0; i < count; i++) {
        char *text = json_dumps(events[i], JSON_COMPACT);
        assert_null(strstr(text, "s3cret-value"));
        password_event |= strstr(text, "ssl.key.password") && strstr(text, "[hidden]");
        free(text);
    }
    assert_true(password_event);
    /* No authorizer is loaded: the default allow-all decisions are audited
     * too (DeleteTopics asks DELETE on the topic). */
    bool allowed_delete = false;
    for (size_t i = 0; i < count && !allowed_delete; i++) {
        const char *type = json_string_value(json_object_get(events[i], "type"));
        const char *op = json_string_value(json_object_get(events[i], "operation"));
        const char *name = json_string_value(json_object_get(events[i], "resource_name"));
        const char *decision = json_string_value(json_object_get(events[i], "decision"));
        allowed_delete = type && !strcmp(type, "authorization") && op && !strcmp(op, "DELETE") && name &&
                         !strcmp(name, "audited") && decision && !strcmp(decision, "allowed");
    }
    if (!allowed_delete)
        fail_msg("no allowed DELETE authorization event on 'audited' among %zu events", count);
    json_t *created = audit_it_find(events, count, "CreateTopics", "audited", 0);
    json_t *details = json_object_get(created, "details");
    if (json_is_object(details) && json_object_get(details, "partitions"))
        assert_int_equal(json_integer_value(json_object_get(details, "partitions")), 3);
    for (size_t i = 0; i < count; i++)
        json_decref(events[i]);
    broker_mark_passed(&st->broker);
}

static int audit_it_setup(void **state)
{
    static struct audit_it_state st;
    memset(&st, 0, sizeof(st));
    const char *tmp = getenv("TMPDIR");
    snprintf(st.dir, sizeof(st.dir), "%s/cairn-audit-it-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(st.dir))
        return -1;
    snprintf(st.log_path, sizeof(st.log_path), "%s/audit.log", st.dir);
    *state = &st;
    return 0;
}

static int audit_it_teardown(void **state)
{
    struct audit_it_state *st = *state;
    bool passed = st->broker.passed;
    broker_cleanup(&st->broker);
    if (passed) {
        unlink(st->log_path);
        rmdir(st->dir);
    } else {
        fprintf(stderr, "[audit-it] kept %s\n", st->dir);
    }
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_admin_events_reach_the_file),
    };
    return cmocka_run_group_tests(tests, audit_it_setup, audit_it_teardown);
}
