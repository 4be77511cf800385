/* The audit plugin, loaded with dlopen into a test host: event fields and
 * file rotation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "audit_support.h"
#include "test_host.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void audit_check_request_fields(json_t *line, int api_key, const char *api_name)
{
    assert_string_equal(audit_str(line, "principal"), "User:alice");
    assert_string_equal(audit_str(line, "client"), "10.1.2.3:54321");
    assert_string_equal(audit_str(line, "client_id"), "app-1");
    assert_string_equal(audit_str(line, "listener"), "EXTERNAL");
    assert_string_equal(audit_str(line, "security_protocol"), "SASL_SSL");
    assert_int_equal(audit_int(line, "connection_id"), 77);
    assert_int_equal(audit_int(line, "api_key"), api_key);
    assert_string_equal(audit_str(line, "api_name"), api_name);
    assert_int_equal(audit_int(line, "api_version"), 7);
    assert_int_equal(audit_int(line, "correlation_id"), 42);
}

static void test_descriptor(void **state)
{
    struct audit_test *t = *state;
    const struct cairn_plugin_descriptor *d = t->host.descriptor;
    assert_int_equal(d->capabilities, CAIRN_CAP_AUDIT);
    assert_non_null(d->audit);
    assert_non_null(d->audit->on_event);
    assert_null(d->quota);
    const char *keys[] = {"sink",
                          "file.path",
                          "file.max.bytes",
                          "file.max.files",
                          "queue.capacity",
                          "queue.full.policy",
                          "include.types",
                          "exclude.types",
                          "include.resources",
                          "exclude.resources"};
    assert_int_equal(d->config_key_count, sizeof(keys) / sizeof(keys[0]));
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        assert_non_null(test_host_declared(&t->host, keys[i]));
    assert_string_equal(test_host_declared(&t->host, "file.max.bytes")->default_value, "100MiB");
    assert_string_equal(test_host_declared(&t->host, "file.max.files")->default_value, "10");
    assert_string_equal(test_host_declared(&t->host, "queue.capacity")->default_value, "10000");
    assert_string_equal(test_host_declared(&t->host, "queue.full.policy")->default_value, "block");
    assert_string_equal(test_host_declared(&t->host, "sink")->default_value, "file");
}

static void test_event_fields(void **state)
{
    struct audit_test *t = *state;
    audit_start(t);

    struct cairn_request_info sasl = audit_request(36);
    struct cairn_audit_event authn = {
        .struct_size = sizeof(struct cairn_audit_event),
        .type = CAIRN_AUDIT_AUTHENTICATION,
        .timestamp_ms = 1700000000123,
        .request = &sasl,
        .mechanism = "SCRAM-SHA-256",
        .success = false,
        .error_message = "Authentication failed: invalid credentials",
    };
    audit_send(t, &authn);

    struct cairn_request_info produce = audit_request(0);
    struct cairn_audit_event authz = {
        .struct_size = sizeof(struct cairn_audit_event),
        .type = CAIRN_AUDIT_AUTHORIZATION,
        .timestamp_ms = 1700000000999,
        .request = &produce,
        .success = true,
        .operation = CAIRN_OP_WRITE,
        .resource_type = CAIRN_RESOURCE_TOPIC,
        .resource_name = "orders",
        .pattern_type = CAIRN_PATTERN_LITERAL,
    };
    audit_send(t, &authz);
    authz.success = false;
    authz.operation = CAIRN_OP_DESCRIBE_CONFIGS;
    authz.resource_type = CAIRN_RESOURCE_CLUSTER;
    authz.resource_name = "kafka-cluster";
    authz.pattern_type = CAIRN_PATTERN_PREFIXED;
    audit_send(t, &authz);

    struct cairn_request_info create = audit_request(19);
    struct cairn_audit_event admin = audit_admin_event(&create, "orders");
    admin.error_code = 36;
    admin.details_json = "{\"partitions\":3,\"replication_factor\":1,\"configs\":{\"retention.ms\":\"1000\"}}";
    audit_send(t, &admin);
    test_host_fini(&t->host);

    struct audit_lines lines = audit_read(t->log_path);
    assert_int_equal(lines.count, 4);

    json_t *line = lines.items[0];
    assert_string_equal(audit_str(line, "time"), "2023-11-14T22:13:20.123Z");
    assert_string_equal(audit_str(line, "type"), "authentication");
    audit_check_request_fields(line, 36, "SaslAuthenticate");
    assert_string_equal(audit_str(line, "mechanism"), "SCRAM-SHA-256");
    assert_true(json_is_false(json_object_get(line, "success")));
    assert_string_equal(audit_str(line, "error"), "Authentication failed: invalid credentials");

    line = lines.items[1];
    assert_string_equal(audit_str(line, "time"), "2023-11-14T22:13:20.999Z");
    assert_string_equal(audit_str(line, "type"), "authorization");
    audit_check_request_fields(line, 0, "Produce");
    assert_string_equal(audit_str(line, "operation"), "WRITE");
    assert_string_equal(audit_str(line, "resource_type"), "TOPIC");
    assert_string_equal(audit_str(line, "resource_name"), "orders");
    assert_string_equal(audit_str(line, "pattern_type"), "LITERAL");
    assert_string_equal(audit_str(line, "decision"), "allowed");

    line = lines.items[2];
    assert_string_equal(audit_str(line, "operation"), "DESCRIBE_CONFIGS");
    assert_string_equal(audit_str(line, "resource_type"), "CLUSTER");
    assert_string_equal(audit_str(line, "resource_name"), "kafka-cluster");
    assert_string_equal(audit_str(line, "pattern_type"), "PREFIXED");
    assert_string_equal(audit_str(line, "decision"), "denied");

    line = lines.items[3];
    assert_string_equal(audit_str(line, "type"), "admin");
    audit_check_request_fields(line, 19, "CreateTopics");
    assert_string_equal(audit_str(line, "operation"), "CreateTopics");
    assert_string_equal(audit_str(line, "resource_type"), "TOPIC");
    assert_string_equal(audit_str(line, "resource_name"), "orders");
    assert_int_equal(audit_int(line, "error_code"), 36);
    json_t *details = json_object_get(line, "details");
    assert_true(json_is_object(details));
    assert_int_equal(audit_int(details, "partitions"), 3);
    assert_int_equal(audit_int(details, "replication_factor"), 1);
    assert_string_equal(audit_str(json_object_get(details, "configs"), "retention.ms"), "1000");
    audit_lines_free(&lines);
}

/* Odd inputs a network peer or an older host can produce. */
static void test_event_edge_cases(void **state)
{
    struct audit_test *t = *state;
    atomic_store(&t->host.fixed_wall_ms, 86400000LL + 5);
    audit_start(t);

    /* Outside a request, IPv6 peer, invalid UTF-8 client id, no timestamp. */
    struct cairn_request_info request = audit_request(-1);
    request.client_host = "::1";
    request.client_port = 9092;
    request.client_id = "bad\xff\xfe-id";
    request.principal = NULL;
    struct cairn_audit_event event = audit_admin_event(&request, "t1");
    event.timestamp_ms = 0;
    event.details_json = "not json";
    audit_send(t, &event);

    event.details_json = NULL;
    event.resource_name = NULL;
    audit_send(t, &event);

    /* A type this plugin does not know is ignored, as the ABI asks. */
    event.type = 99;
    audit_send(t, &event);

    /* An older host's shorter event: fields past struct_size are unseen. */
    struct cairn_audit_event short_event = audit_admin_event(&request, "t2");
    short_event.struct_size = (uint32_t)offsetof(struct cairn_audit_event, admin_operation);
    audit_send(t, &short_event);
    test_host_fini(&t->host);

    struct audit_lines lines = audit_read(t->log_path);
    assert_int_equal(lines.count, 3);
    json_t *line = lines.items[0];
    assert_string_equal(audit_str(line, "time"), "1970-01-02T00:00:00.005Z");
    assert_string_equal(audit_str(line, "client"), "[::1]:9092");
    assert_string_equal(audit_str(line, "client_id"), "bad?"
                                                      "?-id");
    assert_null(json_object_get(line, "principal"));
    assert_null(json_object_get(line, "api_key"));
    assert_null(json_object_get(line, "api_name"));
    assert_string_equal(audit_str(line, "details"), "not json");
    assert_true(json_is_null(json_object_get(lines.items[1], "details")));
    assert_true(json_is_null(json_object_get(lines.items[1], "resource_name")));
    assert_true(json_is_null(json_object_get(lines.items[2], "operation")));
    assert_string_equal(audit_str(lines.items[2], "resource_name"), "t2");
    audit_lines_free(&lines);
    assert_int_equal(test_host_metric(&t->host, "dropped_events"), 0);
}

static size_t audit_file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (size_t)st.st_size : 0;
}

static bool audit_exists(const char *path)
{
    return access(path, F_OK) == 0;
}

static void test_rotation_and_retention(void **state)
{
    struct audit_test *t = *state;
    test_host_set(&t->host, "file.max.bytes", "2000");
    test_host_set(&t->host, "file.max.files", "3");
    audit_start(t);
    struct cairn_request_info request = audit_request(19);
    enum { EVENTS = 300 };
    for (int i = 0; i < EVENTS; i++) {
        char topic[32];
        snprintf(topic, sizeof(topic), "topic-%05d", i);
        struct cairn_audit_event event = audit_admin_event(&request, topic);
        audit_send(t, &event);
    }
    test_host_fini(&t->host);

    /* Newest events: audit.log, then .1, .2, .3 (older); .4 never exists. */
    char path[400];
    int expected_next = EVENTS - 1;
    size_t total = 0;
    for (int n = 0; n <= 3; n++) {
        if (n == 0)
            snprintf(path, sizeof(path), "%s", t->log_path);
        else
            snprintf(path, sizeof(path), "%s.%d", t->log_path, n);
        assert_true(audit_exists(path));
        size_t size = audit_file_size(path);
        assert_true(size <= 2000);
        struct audit_lines lines = audit_read(path);
        assert_true(lines.count > 0);
        /* Full files were rotated because one more line did not fit. */
        if (n > 0)
            assert_true(size + size / lines.count > 2000);
        for (size_t i = lines.count; i-- > 0;) {
            char want[32];
            snprintf(want, sizeof(want), "topic-%05d", expected_next--);
            assert_string_equal(audit_str(lines.items[i], "resource_name"), want);
        }
        total += lines.count;
        audit_lines_free(&lines);
    }
    snprintf(path, sizeof(path), "%s.4", t->log_path);
    assert_false(audit_exists(path));
    assert_true(total < EVENTS);

    /* A restart appends to the current file and keeps rotating from there. */
    size_t before = audit_file_size(t->log_path);
    audit_start(t);
    struct cairn_audit_event event = audit_admin_event(&request, "after-restart");
    audit_send(t, &event);
    test_host_fini(&t->host);
    struct audit_lines lines = audit_read(t->log_path);
    assert_string_equal(audit_str(lines.items[lines.count - 1], "resource_name"), "after-restart");
    if (lines.count == 1)
        assert_true(before + audit_file_size(t->log_path) > 2000); /* it had to rotate */
    else
        assert_true(audit_file_size(t->log_path) > before);
    audit_lines_free(&lines);
}

static void test_max_files_zero_keeps_only_current(void **state)
{
    struct audit_test *t = *state;
    test_host_set(&t->host, "file.max.bytes", "1000");
    test_host_set(&t->host, "file.max.files", "0");
    audit_start(t);
    struct cairn_request_info request = audit_request(19);
    for (int i = 0; i < 50; i++) {
        struct cairn_audit_event event = audit_admin_event(&request, "x");
        audit_send(t, &event);
    }
    test_host_fini(&t->host);
    char path[400];
    snprintf(path, sizeof(path), "%s.1", t->log_path);
    assert_false(audit_exists(path));
    assert_true(audit_file_size(t->log_path) <= 1000);
    assert_true(audit_file_size(t->log_path) > 0);
}

/* sink=stdout writes the same lines to the process's standard output. */
static void test_stdout_sink(void **state)
{
    struct audit_test *t = *state;
    int pipe_fds[2];
    assert_int_equal(pipe(pipe_fds), 0);
    fflush(stdout);
    int saved_stdout = dup(STDOUT_FILENO);
    assert_true(saved_stdout >= 0);
    assert_true(dup2(pipe_fds[1], STDOUT_FILENO) >= 0);
    close(pipe_fds[1]);
    test_host_set(&t->host, "sink", "stdout");
    char err[512];
    int rc = test_host_init(&t->host, err, sizeof(err));
    if (rc == CAIRN_OK) {
        struct cairn_request_info request = audit_request(19);
        struct cairn_audit_event event = audit_admin_event(&request, "to-stdout");
        audit_send(t, &event);
        audit_send(t, &event);
        test_host_fini(&t->host);
    }
    /* Restore stdout before any assertion can print. */
    dup2(saved_stdout, STDOUT_FILENO);
    close(saved_stdout);
    if (rc != CAIRN_OK)
        fail_msg("init with sink=stdout: %s", err);
    char buf[8192];
    ssize_t n = read(pipe_fds[0], buf, sizeof(buf) - 1);
    close(pipe_fds[0]);
    assert_true(n > 0);
    buf[n] = '\0';
    char *second = strchr(buf, '\n');
    assert_non_null(second);
    *second++ = '\0';
    json_t *line = json_loads(buf, 0, NULL);
    assert_non_null(line);
    assert_string_equal(audit_str(line, "resource_name"), "to-stdout");
    json_decref(line);
    assert_non_null(strstr(second, "\"to-stdout\""));
    assert_false(access(t->log_path, F_OK) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_descriptor, audit_setup, audit_teardown),
        cmocka_unit_test_setup_teardown(test_event_fields, audit_setup, audit_teardown),
        cmocka_unit_test_setup_teardown(test_event_edge_cases, audit_setup, audit_teardown),
        cmocka_unit_test_setup_teardown(test_rotation_and_retention, audit_setup, audit_teardown),
        cmocka_unit_test_setup_teardown(test_max_files_zero_keeps_only_current, audit_setup, audit_teardown),
        cmocka_unit_test_setup_teardown(test_stdout_sink, audit_setup, audit_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
