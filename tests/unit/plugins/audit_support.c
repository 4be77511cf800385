/* Shared helpers of the audit plugin unit tests; see audit_support.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "audit_support.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int audit_setup(void **state)
{
    struct audit_test *t = calloc(1, sizeof(*t));
    if (!t)
        return -1;
    test_host_load(&t->host, "audit");
    const char *tmp = getenv("TMPDIR");
    snprintf(t->dir, sizeof(t->dir), "%s/cairn-audit-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(t->dir))
        return -1;
    snprintf(t->log_path, sizeof(t->log_path), "%s/audit.log", t->dir);
    test_host_set(&t->host, "file.path", t->log_path);
    *state = t;
    return 0;
}

int audit_teardown(void **state)
{
    struct audit_test *t = *state;
    test_host_unload(&t->host);
    char command[400];
    snprintf(command, sizeof(command), "rm -rf '%s'", t->dir);
    if (system(command) != 0)
        fprintf(stderr, "could not remove %s\n", t->dir);
    free(t);
    return 0;
}

void audit_start(struct audit_test *t)
{
    char err[512];
    int rc = test_host_init(&t->host, err, sizeof(err));
    if (rc != CAIRN_OK)
        fail_msg("audit init failed: %s", err);
}

void audit_send(struct audit_test *t, const struct cairn_audit_event *event)
{
    t->host.descriptor->audit->on_event(t->host.instance, event);
}

static const struct cairn_principal alice = {sizeof(struct cairn_principal), "User", "alice"};

struct cairn_request_info audit_request(int16_t api_key)
{
    return (struct cairn_request_info){
        .struct_size = sizeof(struct cairn_request_info),
        .connection_id = 77,
        .principal = &alice,
        .client_host = "10.1.2.3",
        .client_port = 54321,
        .client_id = "app-1",
        .listener_name = "EXTERNAL",
        .security_protocol = "SASL_SSL",
        .api_key = api_key,
        .api_version = 7,
        .correlation_id = 42,
    };
}

/* An admin event on a topic, numbered through its resource name. */
struct cairn_audit_event audit_admin_event(const struct cairn_request_info *request, const char *topic)
{
    return (struct cairn_audit_event){
        .struct_size = sizeof(struct cairn_audit_event),
        .type = CAIRN_AUDIT_ADMIN,
        .timestamp_ms = 1700000000123,
        .request = request,
        .admin_operation = "CreateTopics",
        .resource_type = CAIRN_RESOURCE_TOPIC,
        .resource_name = topic,
        .error_code = 0,
        .details_json = "{\"partitions\":3}",
    };
}

struct audit_lines audit_read(const char *path)
{
    struct audit_lines lines = {0};
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("open %s: %s", path, strerror(errno));
    size_t cap = 0;
    char *buf = NULL;
    size_t bufcap = 0;
    ssize_t n;
    while ((n = getline(&buf, &bufcap, f)) > 0) {
        if (buf[n - 1] != '\n')
            fail_msg("%s: line %zu has no newline", path, lines.count + 1);
        json_error_t error;
        json_t *value = json_loadb(buf, (size_t)n, 0, &error);
        if (!value || !json_is_object(value))
            fail_msg("%s line %zu is not a JSON object: %s (%s)", path, lines.count + 1, buf, error.text);
        if (lines.count == cap) {
            cap = cap ? cap * 2 : 64;
            lines.items = realloc(lines.items, cap * sizeof(*lines.items));
            assert_non_null(lines.items);
        }
        lines.items[lines.count++] = value;
    }
    free(buf);
    fclose(f);
    return lines;
}

void audit_lines_free(struct audit_lines *lines)
{
    for (size_t i = 0; i < lines->count; i++)
        json_decref(lines->items[i]);
    free(lines->items);
    lines->items = NULL;
    lines->count = 0;
}

const char *audit_str(json_t *object, const char *key)
{
    json_t *value = json_object_get(object, key);
    if (!json_is_string(value))
        fail_msg("field %s is missing or not a string", key);
    return json_string_value(value);
}

json_int_t audit_int(json_t *object, const char *key)
{
    json_t *value = json_object_get(object, key);
    if (!json_is_integer(value))
        fail_msg("field %s is missing or not an integer", key);
    return json_integer_value(value);
}
