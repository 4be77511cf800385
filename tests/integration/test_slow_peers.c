/* Slow peers against a real cairnd, with raw sockets: a client that
 * trickles a request a byte at a time, and one that pipelines requests and
 * never reads the answers, are each closed within a bound derived from
 * connections.max.idle.ms (a request must arrive, and a response be taken,
 * within it), while a well-behaved client keeps getting answers.
 *
 * Before that bound existed, the trickler counted as active forever and the
 * non-reader, having a response pending, was never checked for idleness. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "raw_kafka.h"

#define IDLE_MS 2000
#define TRICKLERS 5
#define NON_READERS 5
#define DEADLINE_MS 40000
#define GOOD_BOUND_MS 5000

/* True once the kernel says the connection is no longer established (the
 * broker closed or reset it); reads nothing. */
static bool socket_closed(int fd)
{
    struct tcp_info info;
    socklen_t len = sizeof info;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0)
        return true;
    return info.tcpi_state != TCP_ESTABLISHED;
}

/* A connection with a tiny receive buffer, so unread answers back up fast. */
static int connect_small_rcvbuf(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    int small = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

/* Pipelines ApiVersions requests without reading until the broker stops
 * taking them (its answers fill both socket buffers). */
static void flood_unread(int fd)
{
    struct raw_writer w;
    raw_writer_init(&w);
    for (int i = 0; i < 64; i++) {
        raw_frame_begin(&w, 18, 0, i, "non-reader");
        raw_frame_finish(&w);
    }
    long long end = harness_now_ms() + 10000;
    size_t sent_total = 0;
    while (harness_now_ms() < end) {
        ssize_t n = send(fd, w.data, w.len, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
            sent_total += (size_t)n;
            if ((size_t)n < w.len)
                break; /* the rest would not fit: the broker stopped reading */
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        fail_msg("send failed: %s", strerror(errno));
    }
    assert_true(sent_total > 0);
    raw_writer_free(&w);
}

static void test_slow_peers_are_closed(void **state)
{
    (void)state;
    struct test_broker b = {0};
    char idle_kv[64];
    snprintf(idle_kv, sizeof idle_kv, "connections.max.idle.ms=%d", IDLE_MS);
    const char *overrides[] = {idle_kv, NULL};
    broker_start(&b, overrides);
    int port = broker_port(&b);

    int non_readers[NON_READERS], tricklers[TRICKLERS];
    for (int i = 0; i < NON_READERS; i++) {
        non_readers[i] = connect_small_rcvbuf(port);
        flood_unread(non_readers[i]);
    }
    /* Each trickler announces a 4096-byte request and sends it a byte at a
     * time, often enough that it is never idle. */
    for (int i = 0; i < TRICKLERS; i++) {
        tricklers[i] = raw_connect(port, 5000);
        assert_true(tricklers[i] >= 0);
        uint8_t size[4] = {0, 0, 0x10, 0}; /* 4096 bytes: never finished within the test */
        assert_int_equal(raw_send_all(tricklers[i], size, sizeof size), 0);
    }

    int good = raw_connect(port, GOOD_BOUND_MS * 2);
    assert_true(good >= 0);
    long long start = harness_now_ms(), worst_ms = 0, trickler_closed_ms = -1, non_reader_closed_ms = -1;
    int good_round_trips = 0, trickled = 0;
    while (harness_now_ms() - start < DEADLINE_MS) {
        int open_tricklers = 0, open_non_readers = 0;
        for (int i = 0; i < TRICKLERS; i++) {
            if (tricklers[i] < 0)
                continue;
            uint8_t byte = 0;
            if (trickled < 4095 && send(tricklers[i], &byte, 1, MSG_NOSIGNAL) == 1 && !socket_closed(tricklers[i])) {
                open_tricklers++;
                continue;
            }
            if (trickled >= 4095 && !socket_closed(tricklers[i])) {
                open_tricklers++;
                continue;
            }
            close(tricklers[i]);
            tricklers[i] = -1;
        }
        trickled++;
        for (int i = 0; i < NON_READERS; i++) {
            if (non_readers[i] < 0)
                continue;
            if (!socket_closed(non_readers[i])) {
                open_non_readers++;
                continue;
            }
            close(non_readers[i]);
            non_readers[i] = -1;
        }
        long long now = harness_now_ms();
        if (open_tricklers == 0 && trickler_closed_ms < 0)
            trickler_closed_ms = now - start;
        if (open_non_readers == 0 && non_reader_closed_ms < 0)
            non_reader_closed_ms = now - start;

        long long t0 = harness_now_ms();
        struct raw_api_versions v;
        assert_int_equal(raw_api_versions(good, 0, 1000 + good_round_trips, &v), 0);
        long long took = harness_now_ms() - t0;
        if (took > worst_ms)
            worst_ms = took;
        good_round_trips++;
        if (trickler_closed_ms >= 0 && non_reader_closed_ms >= 0)
            break;
        usleep(250 * 1000); /* a byte every quarter second: never idle for IDLE_MS */
    }
    close(good);
    fprintf(stderr,
            "[slow-peers] connections.max.idle.ms=%d: tricklers closed after %lld ms, non-readers after %lld ms; "
            "good client %d round trips, worst %lld ms\n",
            IDLE_MS, trickler_closed_ms, non_reader_closed_ms, good_round_trips, worst_ms);
    for (int i = 0; i < TRICKLERS; i++)
        if (tricklers[i] >= 0)
            close(tricklers[i]);
    for (int i = 0; i < NON_READERS; i++)
        if (non_readers[i] >= 0)
            close(non_readers[i]);
    if (trickler_closed_ms < 0 || non_reader_closed_ms < 0) {
        broker_print_log_tail(&b, 30);
        fail_msg("slow peers still open after %d ms (tricklers %s, non-readers %s)", DEADLINE_MS,
                 trickler_closed_ms < 0 ? "open" : "closed", non_reader_closed_ms < 0 ? "open" : "closed");
    }
    /* The good client never waited anywhere near the slow peers' bound. */
    assert_true(worst_ms < GOOD_BOUND_MS);
    assert_true(broker_log_contains(&b, "a request took longer than connections.max.idle.ms"));
    broker_stop(&b);
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slow_peers_are_closed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
