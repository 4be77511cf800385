/* The audit plugin's event path, loaded with dlopen into a test host:
 * queue-full policies, draining at fini, filters and config errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "audit_support.h"
#include "test_host.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Reads a FIFO to EOF on its own thread, counting lines. */
struct fifo_reader {
    int fd;
    size_t lines;
    size_t bytes;
};

static void *fifo_reader_main(void *arg)
{
    struct fifo_reader *reader = arg;
    char buf[65536];
    for (;;) {
        ssize_t n = read(reader->fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        reader->bytes += (size_t)n;
        for (ssize_t i = 0; i < n; i++)
            reader->lines += buf[i] == '\n';
    }
    return NULL;
}

/* The writer blocks on a FIFO nobody reads yet: with a tiny queue and the
 * drop policy, on_event never waits and every loss is counted. */
static void test_drop_policy_counts_drops(void **state)
{
    struct audit_test *t = *state;
    char fifo[400];
    snprintf(fifo, sizeof(fifo), "%s/audit.fifo", t->dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    /* Opened first so the plugin's open for writing does not wait. */
    int read_fd = open(fifo, O_RDONLY | O_NONBLOCK);
    assert_true(read_fd >= 0);
    test_host_set(&t->host, "file.path", fifo);
    test_host_set(&t->host, "queue.capacity", "4");
    test_host_set(&t->host, "queue.full.policy", "drop");
    audit_start(t);

    enum { EVENTS = 3000 }; /* ~1 MB: far more than a pipe buffer holds */
    struct cairn_request_info request = audit_request(19);
    char topic[300];
    memset(topic, 'a', sizeof(topic) - 1);
    topic[sizeof(topic) - 1] = '\0';
    for (int i = 0; i < EVENTS; i++) {
        struct cairn_audit_event event = audit_admin_event(&request, topic);
        audit_send(t, &event);
    }
    int64_t dropped = test_host_metric(&t->host, "dropped_events");
    assert_true(dropped > 0);
    assert_true(dropped < EVENTS);

    int flags = fcntl(read_fd, F_GETFL);
    assert_int_equal(fcntl(read_fd, F_SETFL, flags & ~O_NONBLOCK), 0);
    struct fifo_reader reader = {.fd = read_fd};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, fifo_reader_main, &reader), 0);
    test_host_fini(&t->host); /* drains into the reader, then closes: EOF */
    pthread_join(thread, NULL);
    close(read_fd);
    assert_int_equal((int64_t)reader.lines + dropped, EVENTS);
}

/* Producers share the queue with the writer; under the block policy
 * every event arrives, in each producer's order. */
struct block_producer {
    struct audit_test *test;
    int id;
    int events;
};

static void *block_producer_main(void *arg)
{
    struct block_producer *p = arg;
    struct cairn_request_info request = audit_request(19);
    char topic[32];
    for (int i = 0; i < p->events; i++) {
        snprintf(topic, sizeof(topic), "t%d-%d", p->id, i);
        struct cairn_audit_event event = audit_admin_event(&request, topic);
        audit_send(p->test, &event);
    }
    return NULL;
}

static void test_block_policy_loses_nothing(void **state)
{
    struct audit_test *t = *state;
    test_host_set(&t->host, "queue.capacity", "16");
    test_host_set(&t->host, "queue.full.policy", "block");
    audit_start(t);
    enum { PRODUCERS = 4, PER_PRODUCER = 25000 };
    struct block_producer producers[PRODUCERS];
    pthread_t threads[PRODUCERS];
    for (int i = 0; i < PRODUCERS; i++) {
        producers[i] = (struct block_producer){.test = t, .id = i, .events = PER_PRODUCER};
        assert_int_equal(pthread_create(&threads[i], NULL, block_producer_main, &producers[i]), 0);
    }
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(threads[i], NULL);
    test_host_fini(&t->host);

    struct audit_lines lines = audit_read(t->log_path);
    assert_int_equal(lines.count, PRODUCERS * PER_PRODUCER);
    int next[PRODUCERS] = {0};
    for (size_t i = 0; i < lines.count; i++) {
        int id = -1, seq = -1;
        const char *name = audit_str(lines.items[i], "resource_name");
        if (sscanf(name, "t%d-%d", &id, &seq) != 2 || id < 0 || id >= PRODUCERS)
            fail_msg("line %zu names %s", i + 1, name);
        if (seq != next[id])
            fail_msg("producer %d: event %d where %d was due", id, seq, next[id]);
        next[id]++;
    }
    audit_lines_free(&lines);
    assert_int_equal(test_host_metric(&t->host, "dropped_events"), 0);
}

static void test_fini_drains_queue(void **state)
{
    struct audit_test *t = *state;
    test_host_set(&t->host, "queue.capacity", "100000");
    audit_start(t);
    enum { EVENTS = 50000 };
    struct cairn_request_info request = audit_request(19);
    for (int i = 0; i < EVENTS; i++) {
        struct cairn_audit_event event = audit_admin_event(&request, "drain");
        audit_send(t, &event);
    }
    /* Straight to fini: most events are still queued. */
    test_host_fini(&t->host);
    struct audit_lines lines = audit_read(t->log_path);
    assert_int_equal(lines.count, EVENTS);
    audit_lines_free(&lines);
}

static struct cairn_audit_event filter_event(const struct cairn_request_info *request, int32_t type,
                                             const char *resource)
{
    struct cairn_audit_event event = audit_admin_event(request, resource);
    event.type = type;
    if (type == CAIRN_AUDIT_AUTHENTICATION) {
        event.mechanism = "PLAIN";
        event.success = true;
        event.resource_name = NULL;
    }
    return event;
}

/* Sends one event of each type on each topic and returns what was written
 * as "type:resource" strings joined by spaces. */
static void filter_run(struct audit_test *t, char *out, size_t outlen)
{
    audit_start(t);
    struct cairn_request_info request = audit_request(19);
    const char *topics[] = {"orders", "orders-internal", "payments", "logs"};
    for (int32_t type = CAIRN_AUDIT_AUTHENTICATION; type <= CAIRN_AUDIT_ADMIN; type++) {
        if (type == CAIRN_AUDIT_AUTHENTICATION) {
            struct cairn_audit_event event = filter_event(&request, type, NULL);
            audit_send(t, &event);
            continue;
        }
        for (size_t i = 0; i < sizeof(topics) / sizeof(topics[0]); i++) {
            struct cairn_audit_event event = filter_event(&request, type, topics[i]);
            audit_send(t, &event);
        }
    }
    test_host_fini(&t->host);
    struct audit_lines lines = audit_read(t->log_path);
    out[0] = '\0';
    for (size_t i = 0; i < lines.count; i++) {
        json_t *name = json_object_get(lines.items[i], "resource_name");
        size_t used = strlen(out);
        snprintf(out + used, outlen - used, "%s%s:%s", i ? " " : "", audit_str(lines.items[i], "type"),
                 json_is_string(name) ? json_string_value(name) : "-");
    }
    audit_lines_free(&lines);
    assert_int_equal(unlink(t->log_path), 0);
}

static void test_filters(void **state)
{
    struct audit_test *t = *state;
    char written[2048];

    filter_run(t, written, sizeof(written));
    assert_string_equal(written, "authentication:- authorization:orders authorization:orders-internal "
                                 "authorization:payments authorization:logs admin:orders "
                                 "admin:orders-internal admin:payments admin:logs");

    test_host_set(&t->host, "include.types", "admin, authentication");
    filter_run(t, written, sizeof(written));
    assert_string_equal(written, "authentication:- admin:orders admin:orders-internal admin:payments admin:logs");

    test_host_set(&t->host, "include.types", "");
    test_host_set(&t->host, "exclude.types", "authorization,authentication");
    test_host_set(&t->host, "include.resources", "orders,pay");
    test_host_set(&t->host, "exclude.resources", "orders-int");
    filter_run(t, written, sizeof(written));
    assert_string_equal(written, "admin:orders admin:payments");

    /* Resource filters leave events without a resource alone. */
    test_host_set(&t->host, "exclude.types", "admin");
    test_host_set(&t->host, "include.resources", "logs");
    test_host_set(&t->host, "exclude.resources", "");
    filter_run(t, written, sizeof(written));
    assert_string_equal(written, "authentication:- authorization:logs");
}

static void expect_init_error(struct audit_test *t, const char *key, const char *value, const char *want_in_error)
{
    test_host_clear_config(&t->host);
    test_host_set(&t->host, "file.path", t->log_path);
    test_host_set(&t->host, key, value);
    char err[512];
    int rc = test_host_init(&t->host, err, sizeof(err));
    if (rc == CAIRN_OK)
        fail_msg("init accepted %s=%s", key, value);
    if (!strstr(err, want_in_error) || !strstr(err, key))
        fail_msg("init error for %s=%s is '%s', expected it to name the key and say '%s'", key, value, err,
                 want_in_error);
}

static void test_bad_config_rejected(void **state)
{
    struct audit_test *t = *state;
    expect_init_error(t, "sink", "kafka", "'kafka'");
    expect_init_error(t, "queue.full.policy", "wait", "'wait'");
    expect_init_error(t, "include.types", "admin,authz", "'authz'");
    expect_init_error(t, "exclude.types", "everything", "'everything'");
    expect_init_error(t, "queue.capacity", "0", "outside");
    expect_init_error(t, "file.max.files", "-1", "outside");
    expect_init_error(t, "file.max.bytes", "0", "file.max.bytes");
    expect_init_error(t, "file.max.bytes", "ten", "not a size");
    expect_init_error(t, "file.path", "/nonexistent-dir/sub/audit.log", "No such file");
    /* And a good config still starts afterwards. */
    test_host_clear_config(&t->host);
    test_host_set(&t->host, "file.path", t->log_path);
    audit_start(t);
    test_host_fini(&t->host);
}

/* A sink whose reader went away: the writer reports EPIPE through the host
 * log and the process lives on (no SIGPIPE reaches it). */
static void test_closed_pipe_sink_reports_error(void **state)
{
    struct audit_test *t = *state;
    char fifo[400];
    snprintf(fifo, sizeof(fifo), "%s/gone.fifo", t->dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    int read_fd = open(fifo, O_RDONLY | O_NONBLOCK);
    assert_true(read_fd >= 0);
    test_host_set(&t->host, "file.path", fifo);
    audit_start(t);
    close(read_fd);
    struct cairn_request_info request = audit_request(19);
    struct cairn_audit_event event = audit_admin_event(&request, "nobody-reads");
    bool reported = false;
    for (int attempt = 0; attempt < 200 && !reported; attempt++) {
        audit_send(t, &event);
        usleep(10000);
        pthread_mutex_lock(&t->host.log_lock);
        reported = strstr(t->host.last_log, "Broken pipe") != NULL;
        pthread_mutex_unlock(&t->host.log_lock);
    }
    test_host_fini(&t->host);
    assert_true(reported);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_drop_policy_counts_drops, audit_setup, audit_teardown),
        cmocka_unit_test_setup_teardown(test_block_policy_loses_nothing, audit_setup, audit_teardown),
        cmocka_unit_test_setup_teardown(test_fini_drains_queue, audit_setup, audit_teardown),
        cmocka_unit_test_setup_teardown(test_closed_pipe_sink_reports_error, audit_setup, audit_teardown),
        cmocka_unit_test_setup_teardown(test_filters, audit_setup, audit_teardown),
        cmocka_unit_test_setup_teardown(test_bad_config_rejected, audit_setup, audit_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
