/* Connection limits against a real cairnd: max.connections.per.ip (and its
 * overrides) and max.connections close a new connection beyond the limit at
 * accept, leave open ones answering, and admit new ones once some close.
 *
 * The broker counts a connection out only when it notices the close, so
 * every "is admitted again" step retries until the broker caught up. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "raw_kafka.h"

#define WAIT_MS 15000
#define IO_MS 5000

static int32_t next_correlation = 1;

static bool answers_api_versions(int fd)
{
    struct raw_api_versions v;
    return raw_api_versions(fd, 0, next_correlation++, &v) == 0 && v.error_code == 0;
}

/* A new connection to port that answers ApiVersions; retried until the
 * broker has counted out connections closed before. */
static int open_admitted(const struct test_broker *b, int port)
{
    long long deadline = harness_now_ms() + WAIT_MS;
    while (harness_now_ms() < deadline) {
        int fd = raw_connect(port, IO_MS);
        if (fd >= 0 && answers_api_versions(fd))
            return fd;
        if (fd >= 0)
            close(fd);
        usleep(20 * 1000);
    }
    broker_print_log_tail(b, 30);
    fail_msg("no connection to port %d was admitted within %d ms", port, WAIT_MS);
    return -1;
}

/* A new connection to port is closed by the broker without an answer. */
static void expect_refused(const struct test_broker *b, int port)
{
    int fd = raw_connect(port, IO_MS);
    assert_true(fd >= 0); /* the kernel completes the handshake; the broker closes it at accept */
    bool closed = raw_wait_closed(fd, WAIT_MS);
    close(fd);
    if (!closed) {
        broker_print_log_tail(b, 30);
        fail_msg("a connection beyond the limit on port %d stayed open", port);
    }
}

static void expect_all_answer(const int *fds, int n)
{
    for (int i = 0; i < n; i++)
        assert_true(answers_api_versions(fds[i]));
}

/* Opens `limit` connections, checks the next is refused while those still
 * answer, then closes one and checks a new one is admitted and the one
 * after that refused again. ports[i % port_count] spreads them over
 * listeners. */
static void exercise_limit(const struct test_broker *b, const int *ports, int port_count, int limit,
                           const char *log_line)
{
    int fds[16];
    assert_true(limit < 16);
    for (int i = 0; i < limit; i++)
        fds[i] = open_admitted(b, ports[i % port_count]);
    expect_refused(b, ports[limit % port_count]);
    expect_all_answer(fds, limit);
    if (!broker_log_contains(b, log_line)) {
        broker_print_log_tail(b, 30);
        fail_msg("no log line with '%s'", log_line);
    }

    close(fds[0]);
    fds[0] = open_admitted(b, ports[(limit + 1) % port_count]);
    expect_refused(b, ports[0]);
    expect_all_answer(fds, limit);
    for (int i = 0; i < limit; i++)
        close(fds[i]);
}

static void test_max_connections_per_ip(void **state)
{
    (void)state;
    struct test_broker b = {0};
    const char *overrides[] = {"max.connections.per.ip=3", NULL};
    broker_start(&b, overrides);
    int port = broker_port(&b);
    exercise_limit(&b, &port, 1, 3, "max.connections.per.ip (3) reached");
    broker_stop(&b);
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

static void test_per_ip_override_raises_the_limit(void **state)
{
    (void)state;
    struct test_broker b = {0};
    const char *overrides[] = {"max.connections.per.ip=1", "max.connections.per.ip.overrides=10.9.9.9:2, 127.0.0.1:4",
                               NULL};
    broker_start(&b, overrides);
    int port = broker_port(&b);
    exercise_limit(&b, &port, 1, 4, "max.connections.per.ip (4) reached");
    broker_stop(&b);
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

/* max.connections counts across listeners: the connections alternate
 * between two. */
static void test_max_connections_across_listeners(void **state)
{
    (void)state;
    struct test_broker b = {0};
    int other = harness_free_port();
    assert_true(other > 0);
    char listeners[160];
    snprintf(listeners, sizeof listeners, "listeners=PLAINTEXT://127.0.0.1:{port},OTHER://127.0.0.1:%d", other);
    const char *overrides[] = {"max.connections=3", listeners,
                               "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT", NULL};
    broker_start(&b, overrides);
    int ports[2] = {broker_port(&b), other};
    exercise_limit(&b, ports, 2, 3, "max.connections (3) reached");
    broker_stop(&b);
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_max_connections_per_ip),
        cmocka_unit_test(test_per_ip_override_raises_the_limit),
        cmocka_unit_test(test_max_connections_across_listeners),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
