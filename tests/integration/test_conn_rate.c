/* Connection creation rate and listen backlog against a real cairnd:
 * max.connection.creation.rate (broker-wide and per listener) delays
 * accepts beyond the rate instead of refusing them, and
 * socket.listen.backlog.size is the backlog the listening socket gets.
 *
 * The rate tests assert a lower bound on the time N connections take, which
 * a busy machine only makes longer, so they cannot pass by luck of timing. */
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

#define IO_MS 15000
#define CONNECTIONS 16
#define RATE 4

static int32_t next_correlation = 1;

/* Opens `count` connections one after the other, alternating over ports,
 * each answering ApiVersions; returns the ms it took. Every connection must
 * be served: a rate delays connections, it does not refuse them. */
static long long open_serially(const struct test_broker *b, const int *ports, int port_count, int count)
{
    int fds[CONNECTIONS];
    assert_true(count <= CONNECTIONS);
    long long start = harness_now_ms();
    for (int i = 0; i < count; i++) {
        fds[i] = raw_connect(ports[i % port_count], IO_MS);
        struct raw_api_versions v;
        if (fds[i] < 0 || raw_api_versions(fds[i], 0, next_correlation++, &v) != 0 || v.error_code != 0) {
            broker_print_log_tail(b, 30);
            fail_msg("connection %d to port %d was not served", i, ports[i % port_count]);
        }
    }
    long long took = harness_now_ms() - start;
    for (int i = 0; i < count; i++)
        close(fds[i]);
    return took;
}

/* CONNECTIONS at RATE per second with a burst of RATE need at least
 * (CONNECTIONS - RATE) / RATE seconds; allow for the burst having refilled
 * while the test set up. */
static void expect_throttled(const struct test_broker *b, long long took_ms)
{
    long long floor_ms = (long long)(CONNECTIONS - 2 * RATE) * 1000 / RATE;
    if (took_ms < floor_ms) {
        broker_print_log_tail(b, 30);
        fail_msg("%d connections took %lld ms; at %d/s they need at least %lld ms", CONNECTIONS, took_ms, RATE,
                 floor_ms);
    }
    assert_true(broker_log_contains(b, "max.connection.creation.rate reached"));
}

static void test_listener_rate(void **state)
{
    (void)state;
    struct test_broker b = {0};
    int other = harness_free_port();
    assert_true(other > 0);
    char listeners[160];
    snprintf(listeners, sizeof listeners, "listeners=PLAINTEXT://127.0.0.1:{port},OTHER://127.0.0.1:%d", other);
    char rate[96];
    snprintf(rate, sizeof rate, "listener.name.plaintext.max.connection.creation.rate=%d", RATE);
    const char *overrides[] = {listeners, "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT", rate,
                               NULL};
    broker_start(&b, overrides);
    int port = broker_port(&b);
    long long took = open_serially(&b, &port, 1, CONNECTIONS);
    printf("# %d connections to the limited listener took %lld ms\n", CONNECTIONS, took);
    expect_throttled(&b, took);
    /* The other listener has no rate of its own: it serves at once even
     * while the limited one is still behind. */
    int fd = raw_connect(port, IO_MS);
    assert_true(fd >= 0);
    long long other_took = open_serially(&b, &other, 1, CONNECTIONS);
    printf("# %d connections to the other listener took %lld ms\n", CONNECTIONS, other_took);
    close(fd);
    broker_stop(&b);
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

/* The broker-wide rate counts connections on every listener together. */
static void test_broker_rate_across_listeners(void **state)
{
    (void)state;
    struct test_broker b = {0};
    int other = harness_free_port();
    assert_true(other > 0);
    char listeners[160];
    snprintf(listeners, sizeof listeners, "listeners=PLAINTEXT://127.0.0.1:{port},OTHER://127.0.0.1:%d", other);
    char rate[64];
    snprintf(rate, sizeof rate, "max.connection.creation.rate=%d", RATE);
    const char *overrides[] = {listeners, "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT", rate,
                               NULL};
    broker_start(&b, overrides);
    int ports[2] = {broker_port(&b), other};
    long long took = open_serially(&b, ports, 2, CONNECTIONS);
    printf("# %d connections over two listeners took %lld ms\n", CONNECTIONS, took);
    expect_throttled(&b, took);
    broker_stop(&b);
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

/* The backlog of a listening socket, as ss reports it (its Send-Q column). */
static int listen_backlog(int port)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "ss -Hltn 'sport = :%d' 2>/dev/null", port);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    char line[512];
    int backlog = -1;
    while (fgets(line, sizeof line, p)) {
        char state_name[32];
        int recv_q = 0, send_q = 0;
        if (sscanf(line, "%31s %d %d", state_name, &recv_q, &send_q) == 3 && strcmp(state_name, "LISTEN") == 0)
            backlog = send_q;
    }
    pclose(p);
    return backlog;
}

static void test_listen_backlog(void **state)
{
    (void)state;
    if (system("ss -V >/dev/null 2>&1") != 0)
        fail_msg("this test reads the backlog with ss (iproute2), which is missing");
    struct test_broker b = {0};
    broker_start(&b, NULL);
    assert_int_equal(listen_backlog(broker_port(&b)), 50); /* Kafka's default */
    broker_stop(&b);
    broker_mark_passed(&b);
    broker_cleanup(&b);

    struct test_broker c = {0};
    const char *overrides[] = {"socket.listen.backlog.size=7", NULL};
    broker_start(&c, overrides);
    assert_int_equal(listen_backlog(broker_port(&c)), 7);
    broker_stop(&c);
    broker_mark_passed(&c);
    broker_cleanup(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_listener_rate),
        cmocka_unit_test(test_broker_rate_across_listeners),
        cmocka_unit_test(test_listen_backlog),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
