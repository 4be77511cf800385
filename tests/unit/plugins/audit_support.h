/* Shared helpers of the audit plugin unit tests: a loaded plugin writing
 * to a temp dir, sample requests and events, and reading the JSON Lines
 * back. Include <cmocka.h> first. */
#ifndef CAIRN_TESTS_AUDIT_SUPPORT_H
#define CAIRN_TESTS_AUDIT_SUPPORT_H

#include <jansson.h>

#include "test_host.h"

/* Owned by the test's main thread; io-thread stand-ins only call on_event. */
struct audit_test {
    struct test_host host;
    char dir[256];
    char log_path[320];
};

/* cmocka setup/teardown: load audit.so, point file.path into a temp dir. */
int audit_setup(void **state);
int audit_teardown(void **state);
/* init with the config set so far; fails the test on error. */
void audit_start(struct audit_test *t);
void audit_send(struct audit_test *t, const struct cairn_audit_event *event);

/* A request from User:alice at 10.1.2.3:54321, client id app-1. */
struct cairn_request_info audit_request(int16_t api_key);
/* A CreateTopics admin event on topic. */
struct cairn_audit_event audit_admin_event(const struct cairn_request_info *request, const char *topic);

struct audit_lines {
    json_t **items;
    size_t count;
};
/* Every line of a file, parsed; fails on a line that is not a JSON object. */
struct audit_lines audit_read(const char *path);
void audit_lines_free(struct audit_lines *lines);
/* A field's value; fails when it is missing or of another type. */
const char *audit_str(json_t *object, const char *key);
json_int_t audit_int(json_t *object, const char *key);

#endif
