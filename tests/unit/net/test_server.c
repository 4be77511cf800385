/* End-to-end tests of the network layer: a real server on an ephemeral
 * loopback port, driven by plain blocking sockets. */
#include <setjmp.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "metrics/metrics.h"
#include "net_test_support.h"
#include "net_test_fixture.h"

static void fixture_start(struct fixture *f, const struct net_config *cfg)
{
    fixture_start_with(f, cfg, test_handler);
}

static void expect_echo(int fd, int32_t correlation_id, const void *payload, size_t payload_len)
{
    static uint8_t body[1 << 20];
    int32_t got_id = -1;
    int64_t len = test_read_response(fd, &got_id, body, sizeof(body));
    assert_int_equal(len, (int64_t)payload_len);
    assert_int_equal(got_id, correlation_id);
    if (payload_len > 0)
        assert_memory_equal(body, payload, payload_len);
}

/* Pipelined requests of mixed sizes (some above the 16 KiB input buffer,
 * so both framing paths run) come back complete and in order. */
static void test_pipelined_requests_answer_in_order(void **state)
{
    (void)state;
    struct fixture f;
    struct net_config cfg;
    test_config(&cfg);
    fixture_start(&f, &cfg);

    enum { COUNT = 600 };
    size_t payload_len[COUNT];
    size_t total = 0;
    for (int i = 0; i < COUNT; i++) {
        payload_len[i] = (i % 97 == 0) ? 40000 + (size_t)i : (size_t)(i % 50);
        total += 9 + payload_len[i];
    }
    uint8_t *payload = malloc(41000);
    for (size_t i = 0; i < 41000; i++)
        payload[i] = (uint8_t)(i * 31 + 7);
    uint8_t *wire = malloc(total);
    size_t at = 0;
    for (int i = 0; i < COUNT; i++)
        at += test_build_request(wire + at, 1000 + i, TEST_CMD_ECHO, NULL, 0, payload, payload_len[i]);
    assert_int_equal(at, total);

    int fd = test_connect(f.port);
    assert_true(fd >= 0);
    /* Send in chunks, reading responses while keeping a backlog of about
     * 20 requests, so the server always holds pipelined bytes but neither
     * side blocks on a full socket buffer. */
    size_t sent = 0;
    int answered = 0;
    while (sent < total) {
        size_t chunk = total - sent < 65536 ? total - sent : 65536;
        assert_int_equal(test_send_all(fd, wire + sent, chunk), 0);
        sent += chunk;
        /* Drain responses for requests fully sent so far, leaving a backlog. */
        size_t complete_bytes = 0;
        int complete = 0;
        for (int i = 0; i < COUNT && complete_bytes + 9 + payload_len[i] <= sent; i++) {
            complete_bytes += 9 + payload_len[i];
            complete++;
        }
        while (answered < complete - 20) {
            expect_echo(fd, 1000 + answered, payload, payload_len[answered]);
            answered++;
        }
    }
    while (answered < COUNT) {
        expect_echo(fd, 1000 + answered, payload, payload_len[answered]);
        answered++;
    }
    assert_int_equal(atomic_load(&f.ctx.handled), COUNT);
    close(fd);
    free(wire);
    free(payload);
    fixture_finish(&f);
}

/* Echoes one request of len payload bytes (pattern seeded by seed) and
 * checks the answer byte for byte. */
static void echo_large(int fd, int32_t correlation_id, size_t len, uint8_t seed, const uint8_t *after, size_t after_len)
{
    uint8_t *wire = malloc(len + 16 + after_len);
    uint8_t *payload = malloc(len);
    for (size_t i = 0; i < len; i++)
        payload[i] = (uint8_t)(seed + i * 7);
    size_t at = test_build_request(wire, correlation_id, TEST_CMD_ECHO, NULL, 0, payload, len);
    if (after_len > 0)
        memcpy(wire + at, after, after_len);
    assert_int_equal(test_send_all(fd, wire, at + after_len), 0);
    uint8_t *body = malloc(len);
    int32_t got_id = -1;
    assert_int_equal(test_read_response(fd, &got_id, body, len), (int64_t)len);
    assert_int_equal(got_id, correlation_id);
    assert_memory_equal(body, payload, len);
    free(body);
    free(payload);
    free(wire);
}

/* Large frames are read into kept buffers (frame_pool.c): a frame smaller
 * than the buffer it gets must end where its size says, with the next
 * request's bytes right behind it left for the next frame, and a frame
 * larger than any kept buffer grows one. */
static void test_large_frames_in_kept_buffers(void **state)
{
    (void)state;
    struct fixture f;
    struct net_config cfg;
    test_config(&cfg);
    fixture_start(&f, &cfg);
    struct metrics_metric *reused = metrics_register(METRICS_COUNTER, "cairn_request_frame_pool_reused_total", NULL,
                                                     NULL);
    int64_t reused0 = metrics_value(reused);

    int fd = test_connect(f.port);
    assert_true(fd >= 0);
    echo_large(fd, 1, (3 << 20) + 123, 1, NULL, 0);
    /* The 3 MiB buffer is kept; a 1 MiB frame in it, a small request
     * pipelined right behind. */
    uint8_t small[64];
    const char tail[] = "after the large frame";
    size_t small_len = test_build_request(small, 3, TEST_CMD_ECHO, NULL, 0, tail, sizeof(tail));
    echo_large(fd, 2, (1 << 20) + 7, 2, small, small_len);
    expect_echo(fd, 3, tail, sizeof(tail));
    echo_large(fd, 4, (5 << 20) + 11, 3, NULL, 0);
    assert_true(metrics_value(reused) - reused0 >= 2);
    close(fd);
    fixture_finish(&f);
}

/* A response made of memory pieces and two file regions of several MiB
 * arrives byte for byte, with the client reading late so the server must
 * resume partial writes. */
static void test_splice_response_is_byte_exact(void **state)
{
    (void)state;
    struct fixture f;
    struct net_config cfg;
    test_config(&cfg);
    cfg.socket_send_buffer_bytes = 65536;
    fixture_start(&f, &cfg);

    enum { FILE_BYTES = 6 * 1024 * 1024 };
    char path[] = "/tmp/cairn-net-test-XXXXXX";
    int file_fd = mkstemp(path);
    assert_true(file_fd >= 0);
    unlink(path);
    uint8_t *content = malloc(FILE_BYTES);
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < FILE_BYTES; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        content[i] = (uint8_t)x;
    }
    assert_int_equal(write(file_fd, content, FILE_BYTES), FILE_BYTES);
    f.ctx.splice_fd = file_fd;

    const int32_t pos1 = 12345, len1 = 3 * 1024 * 1024 + 17;
    const int32_t pos2 = 5 * 1024 * 1024, len2 = 1024 * 1024 - 3;
    int32_t args[4] = {pos1, len1, pos2, len2};
    int fd = test_connect(f.port);
    assert_true(fd >= 0);
    assert_int_equal(test_send_request(fd, 77, TEST_CMD_SPLICE, args, 4), 0);
    test_sleep_ms(200);

    size_t body_len = 3 + 4 + (size_t)len1 + 3 + 4 + (size_t)len2 + 3;
    uint8_t *expected = malloc(body_len);
    assert_int_equal(test_splice_body(expected, content, pos1, len1, pos2, len2), body_len);

    uint8_t *body = malloc(body_len);
    int32_t id = 0;
    assert_int_equal(test_read_response(fd, &id, body, body_len), (int64_t)body_len);
    assert_int_equal(id, 77);
    assert_memory_equal(body, expected, body_len);

    /* The connection keeps working after a spliced response. */
    assert_int_equal(test_send_request(fd, 78, TEST_CMD_ECHO, NULL, 0), 0);
    expect_echo(fd, 78, NULL, 0);

    close(fd);
    free(body);
    free(expected);
    free(content);
    fixture_finish(&f);
}

/* Size prefixes that are zero, negative or above socket.request.max.bytes
 * close that connection only. */
static void test_bad_size_prefix_closes_only_that_connection(void **state)
{
    (void)state;
    struct fixture f;
    struct net_config cfg;
    test_config(&cfg);
    cfg.socket_request_max_bytes = 1024 * 1024;
    fixture_start(&f, &cfg);

    int good = test_connect(f.port);
    assert_true(good >= 0);
    const uint32_t bad_sizes[] = {1024 * 1024 + 1, 0, 0xffffffffu, 0x7fffffffu};
    for (size_t i = 0; i < sizeof(bad_sizes) / sizeof(bad_sizes[0]); i++) {
        int bad = test_connect(f.port);
        assert_true(bad >= 0);
        uint8_t prefix[4];
        test_put_be32(prefix, bad_sizes[i]);
        assert_int_equal(test_send_all(bad, prefix, 4), 0);
        assert_true(test_wait_closed(bad));
        close(bad);

        assert_int_equal(test_send_request(good, (int32_t)i, TEST_CMD_ECHO, NULL, 0), 0);
        expect_echo(good, (int32_t)i, NULL, 0);
    }
    /* Exactly the limit is accepted. */
    size_t frame = 1024 * 1024;
    uint8_t *big = calloc(1, frame + 4);
    test_put_be32(big, (uint32_t)frame);
    test_put_be32(big + 4, 555);
    big[8] = TEST_CMD_ECHO;
    assert_int_equal(test_send_all(good, big, frame + 4), 0);
    uint8_t *body = malloc(frame);
    int32_t id = 0;
    assert_int_equal(test_read_response(good, &id, body, frame), (int64_t)(frame - 5));
    assert_int_equal(id, 555);
    free(body);
    free(big);
    close(good);
    fixture_finish(&f);
}

/* Peers that vanish in the middle of a frame, politely or with a reset,
 * do not disturb the other connections. */
static void test_peer_closing_mid_frame_is_contained(void **state)
{
    (void)state;
    struct fixture f;
    struct net_config cfg;
    test_config(&cfg);
    fixture_start(&f, &cfg);

    int good = test_connect(f.port);
    assert_true(good >= 0);

    int cut = test_connect(f.port);
    uint8_t partial[14] = {0, 0, 0, 100, 0, 0, 0, 1, TEST_CMD_ECHO};
    assert_int_equal(test_send_all(cut, partial, sizeof(partial)), 0);
    close(cut);

    int reset = test_connect(f.port);
    size_t big_len = 200000;
    uint8_t *big = calloc(1, big_len);
    test_put_be32(big, 2 * 1024 * 1024);
    assert_int_equal(test_send_all(reset, big, big_len), 0);
    struct linger hard = {1, 0};
    setsockopt(reset, SOL_SOCKET, SO_LINGER, &hard, sizeof(hard));
    close(reset);
    free(big);

    test_sleep_ms(50);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(test_send_request(good, i, TEST_CMD_ECHO, NULL, 0), 0);
        expect_echo(good, i, NULL, 0);
    }
    assert_int_equal(atomic_load(&f.ctx.handled), 5);
    close(good);
    fixture_finish(&f);
}

/* A connection with no traffic is closed after connections.max.idle.ms;
 * one that keeps talking is not. */
static void test_idle_connection_is_closed(void **state)
{
    (void)state;
    struct fixture f;
    struct net_config cfg;
    test_config(&cfg);
    cfg.connections_max_idle_ms = 300;
    fixture_start(&f, &cfg);

    int idle = test_connect(f.port);
    int busy = test_connect(f.port);
    assert_true(idle >= 0 && busy >= 0);
    int64_t start = clock_mono_ms();
    for (int i = 0; i < 8; i++) {
        assert_int_equal(test_send_request(busy, i, TEST_CMD_ECHO, NULL, 0), 0);
        expect_echo(busy, i, NULL, 0);
        test_sleep_ms(100);
    }
    assert_true(test_wait_closed(idle));
    int64_t waited = clock_mono_ms() - start;
    assert_true(waited >= 300);
    assert_true(waited < 3000);
    assert_int_equal(test_send_request(busy, 99, TEST_CMD_ECHO, NULL, 0), 0);
    expect_echo(busy, 99, NULL, 0);
    close(idle);
    close(busy);
    fixture_finish(&f);
}

/* A request completed later from another thread keeps its place: the
 * request pipelined behind it waits and is answered after it. */
static void test_completion_from_another_thread(void **state)
{
    (void)state;
    struct fixture f;
    struct net_config cfg;
    test_config(&cfg);
    fixture_start(&f, &cfg);

    int fd = test_connect(f.port);
    int32_t delay = 150;
    int64_t start = clock_mono_ms();
    assert_int_equal(test_send_request(fd, 1, TEST_CMD_LATER, &delay, 1), 0);
    assert_int_equal(test_send_request(fd, 2, TEST_CMD_ECHO, NULL, 0), 0);
    uint8_t arg[4];
    test_put_be32(arg, (uint32_t)delay);
    expect_echo(fd, 1, arg, 4);
    assert_true(clock_mono_ms() - start >= delay);
    expect_echo(fd, 2, NULL, 0);
    close(fd);
    fixture_finish(&f);
}

/* A connection that closes while its request is held runs the request's
 * cancel hook at once (a parked fetch then gives up instead of waiting
 * for its deadline); one that stays open never runs it. */
static void test_peer_closing_cancels_held_request(void **state)
{
    (void)state;
    struct fixture f;
    struct net_config cfg;
    test_config(&cfg);
    fixture_start(&f, &cfg);

    int kept = test_connect(f.port);
    int32_t short_delay = 100;
    assert_int_equal(test_send_request(kept, 1, TEST_CMD_LATER, &short_delay, 1), 0);
    uint8_t arg[4];
    test_put_be32(arg, (uint32_t)short_delay);
    expect_echo(kept, 1, arg, 4);
    close(kept);

    int fd = test_connect(f.port);
    int32_t delay = 3000;
    assert_int_equal(test_send_request(fd, 2, TEST_CMD_LATER, &delay, 1), 0);
    for (int i = 0; i < 500 && atomic_load(&f.ctx.handled) < 2; i++)
        test_sleep_ms(2);
    assert_int_equal(atomic_load(&f.ctx.handled), 2);
    assert_int_equal(atomic_load(&f.ctx.cancelled), 0);
    int64_t start = clock_mono_ms();
    close(fd);
    for (int i = 0; i < 1000 && atomic_load(&f.ctx.cancelled) < 1; i++)
        test_sleep_ms(2);
    assert_int_equal(atomic_load(&f.ctx.cancelled), 1);
    assert_true(clock_mono_ms() - start < delay / 2);
    fixture_finish(&f);
    assert_int_equal(atomic_load(&f.ctx.cancelled), 1);
}

/* throttle_ms answers at once but holds the next request back. */
static void test_throttle_delays_next_read(void **state)
{
    (void)state;
    struct fixture f;
    struct net_config cfg;
    test_config(&cfg);
    fixture_start(&f, &cfg);

    int fd = test_connect(f.port);
    int32_t throttle = 400;
    int64_t start = clock_mono_ms();
    assert_int_equal(test_send_request(fd, 1, TEST_CMD_THROTTLE, &throttle, 1), 0);
    assert_int_equal(test_send_request(fd, 2, TEST_CMD_ECHO, NULL, 0), 0);
    uint8_t arg[4];
    test_put_be32(arg, (uint32_t)throttle);
    expect_echo(fd, 1, arg, 4);
    assert_true(clock_mono_ms() - start < throttle);
    expect_echo(fd, 2, NULL, 0);
    assert_true(clock_mono_ms() - start >= throttle);
    close(fd);
    fixture_finish(&f);
}

/* With room for one queued request and slow handlers, every request on
 * every connection is still served, in order per connection. */
static void test_full_queue_applies_backpressure(void **state)
{
    (void)state;
    struct fixture f;
    struct net_config cfg;
    test_config(&cfg);
    cfg.queued_max_requests = 1;
    cfg.num_io_threads = 2;
    fixture_start(&f, &cfg);

    enum { CONNS = 6, PER_CONN = 8 };
    int fds[CONNS];
    int32_t sleep_ms = 5;
    for (int c = 0; c < CONNS; c++) {
        fds[c] = test_connect(f.port);
        assert_true(fds[c] >= 0);
        for (int i = 0; i < PER_CONN; i++)
            assert_int_equal(test_send_request(fds[c], c * 100 + i, TEST_CMD_SLOW, &sleep_ms, 1), 0);
    }
    uint8_t arg[4];
    test_put_be32(arg, (uint32_t)sleep_ms);
    for (int c = 0; c < CONNS; c++) {
        for (int i = 0; i < PER_CONN; i++)
            expect_echo(fds[c], c * 100 + i, arg, 4);
        close(fds[c]);
    }
    assert_int_equal(atomic_load(&f.ctx.handled), CONNS * PER_CONN);
    assert_true(atomic_load(&f.ctx.max_concurrent) <= 2);
    fixture_finish(&f);
}

/* No response, then a response followed by a close requested by the handler. */
static void test_no_response_and_close_after(void **state)
{
    (void)state;
    struct fixture f;
    struct net_config cfg;
    test_config(&cfg);
    fixture_start(&f, &cfg);

    int fd = test_connect(f.port);
    assert_int_equal(test_send_request(fd, 1, TEST_CMD_NO_RESPONSE, NULL, 0), 0);
    assert_int_equal(test_send_request(fd, 2, TEST_CMD_ECHO, NULL, 0), 0);
    assert_int_equal(test_send_request(fd, 3, TEST_CMD_CLOSE, NULL, 0), 0);
    assert_int_equal(test_send_request(fd, 4, TEST_CMD_ECHO, NULL, 0), 0);
    expect_echo(fd, 2, NULL, 0);
    expect_echo(fd, 3, NULL, 0);
    assert_true(test_wait_closed(fd));
    close(fd);
    assert_int_equal(atomic_load(&f.ctx.handled), 3);
    fixture_finish(&f);
}

/* Stopping waits for in-flight requests and writes their responses out
 * before closing. */
static void test_stop_completes_inflight_requests(void **state)
{
    (void)state;
    struct fixture f;
    struct net_config cfg;
    test_config(&cfg);
    fixture_start(&f, &cfg);

    enum { CONNS = 3 };
    int fds[CONNS];
    int32_t delay = 300;
    for (int c = 0; c < CONNS; c++) {
        fds[c] = test_connect(f.port);
        assert_int_equal(test_send_request(fds[c], c, TEST_CMD_LATER, &delay, 1), 0);
    }
    for (int i = 0; i < 500 && atomic_load(&f.ctx.handled) < CONNS; i++)
        test_sleep_ms(2);
    assert_int_equal(atomic_load(&f.ctx.handled), CONNS);

    int64_t start = clock_mono_ms();
    net_server_stop(f.server, 5000);
    int64_t took = clock_mono_ms() - start;
    assert_true(took >= delay - 50);
    assert_true(took < 4000);

    uint8_t arg[4];
    test_put_be32(arg, (uint32_t)delay);
    for (int c = 0; c < CONNS; c++) {
        expect_echo(fds[c], c, arg, 4);
        assert_true(test_wait_closed(fds[c]));
        close(fds[c]);
    }
    assert_true(test_connect(f.port) < 0);
    fixture_finish(&f);
}

/* When the grace period runs out, stop returns anyway; the late completion
 * only frees the request. */
static void test_stop_gives_up_after_grace(void **state)
{
    (void)state;
    struct fixture f;
    struct net_config cfg;
    test_config(&cfg);
    fixture_start(&f, &cfg);

    int fd = test_connect(f.port);
    int32_t delay = 1200;
    assert_int_equal(test_send_request(fd, 1, TEST_CMD_LATER, &delay, 1), 0);
    for (int i = 0; i < 500 && atomic_load(&f.ctx.handled) < 1; i++)
        test_sleep_ms(2);
    int64_t start = clock_mono_ms();
    net_server_stop(f.server, 100);
    assert_true(clock_mono_ms() - start < 1000);
    assert_true(test_wait_closed(fd));
    close(fd);
    fixture_finish(&f); /* joins the completer after the late completion */
}

/* A peer that never reads a large response holds the stop to its flush
 * deadline; the log then names that connection and why it was still open. */
static void test_stop_names_unread_response(void **state)
{
    (void)state;
    struct fixture f;
    struct net_config cfg;
    test_config(&cfg);
    fixture_start(&f, &cfg);
    int fd = test_connect(f.port);
    assert_true(fd >= 0);
    int small = 4096;
    assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small), 0);
    /* More than the kernel buffers on both ends hold, echoed back. */
    size_t payload = 16u << 20;
    uint8_t *req = calloc(1, payload + 64);
    assert_non_null(req);
    size_t len = test_build_request(req, 1, TEST_CMD_ECHO, NULL, 0, NULL, 0);
    test_put_be32(req, (uint32_t)(len - 4 + payload));
    assert_int_equal(test_send_all(fd, req, len + payload), 0);
    free(req);
    for (int i = 0; i < 2500 && atomic_load(&f.ctx.handled) < 1; i++)
        test_sleep_ms(2);
    assert_int_equal(atomic_load(&f.ctx.handled), 1);
    test_sleep_ms(200); /* the response is being written, and stalls */

    char log_path[] = "/tmp/cairn-net-stop-XXXXXX";
    int log_fd = mkstemp(log_path);
    assert_true(log_fd >= 0);
    fflush(stderr);
    int saved_stderr = dup(2);
    assert_true(saved_stderr >= 0);
    assert_int_equal(dup2(log_fd, 2), 2);
    net_server_stop(f.server, 300);
    fflush(stderr);
    assert_int_equal(dup2(saved_stderr, 2), 2);
    close(saved_stderr);
    char logged[4096] = "";
    ssize_t n = pread(log_fd, logged, sizeof logged - 1, 0);
    close(log_fd);
    unlink(log_path);
    logged[n > 0 ? n : 0] = '\0';
    if (!strstr(logged, "still open at the flush deadline (its response not fully written)"))
        fail_msg("the stop did not name the connection it gave up on; it logged:\n%s", logged);
    close(fd);
    fixture_finish(&f);
}

/* A connection's auth state for test_stop_while_workers_hold_requests:
 * the worker checks it is still intact after the server gave up. */
struct test_auth_state {
    char tag[32];
};

static atomic_int auth_state_damaged;

static void test_auth_state_free(void *state)
{
    struct test_auth_state *s = state;
    memset(s->tag, 0, sizeof(s->tag));
    free(s);
}

/* The first request of a connection installs its auth state; later ones
 * sleep on the worker for their argument, then read the principal and the
 * auth state, as a SASL handler does. */
static void auth_state_handler(struct net_request *req, void *arg)
{
    struct test_ctx *ctx = arg;
    atomic_fetch_add(&ctx->handled, 1);
    if (!req->auth_state) {
        struct test_auth_state *s = calloc(1, sizeof(*s));
        assert_non_null(s);
        snprintf(s->tag, sizeof(s->tag), "conn-%" PRIu64, req->connection_id);
        assert_int_equal(net_request_set_auth_state(req, s, test_auth_state_free), 0);
    } else {
        test_sleep_ms(test_arg(req, 0));
        char want[32];
        snprintf(want, sizeof(want), "conn-%" PRIu64, req->connection_id);
        const struct test_auth_state *s = req->auth_state;
        if (strcmp(s->tag, want) != 0 || strcmp(req->principal_type, "User") != 0 ||
            strcmp(req->principal_name, "ANONYMOUS") != 0)
            atomic_fetch_add(&auth_state_damaged, 1);
    }
    struct kafka_writer w;
    test_echo_response(&w, req);
    net_request_complete(req, &w, 0, false);
}

/* A stop that gives up while a worker still runs one connection's request
 * and others wait in the queue: the connections are freed only after the
 * workers are joined, so what a handler reads through the request stays
 * valid (a heap-use-after-free under ASan before). */
static void test_stop_while_workers_hold_requests(void **state)
{
    (void)state;
    struct fixture f;
    struct net_config cfg;
    test_config(&cfg);
    cfg.num_io_threads = 1;
    fixture_start_with(&f, &cfg, auth_state_handler);
    atomic_store(&auth_state_damaged, 0);

    enum { CONNS = 4 };
    int fds[CONNS];
    int32_t no_sleep = 0, sleep_ms = 400;
    for (int c = 0; c < CONNS; c++) {
        fds[c] = test_connect(f.port);
        assert_int_equal(test_send_request(fds[c], c, TEST_CMD_SLOW, &no_sleep, 1), 0);
        uint8_t arg[4];
        test_put_be32(arg, 0);
        expect_echo(fds[c], c, arg, 4);
    }
    for (int c = 0; c < CONNS; c++)
        assert_int_equal(test_send_request(fds[c], 100 + c, TEST_CMD_SLOW, &sleep_ms, 1), 0);
    for (int i = 0; i < 500 && atomic_load(&f.ctx.handled) < CONNS + 1; i++)
        test_sleep_ms(2);
    assert_int_equal(atomic_load(&f.ctx.handled), CONNS + 1);

    int64_t start = clock_mono_ms();
    net_server_stop(f.server, 50);
    /* The one running request finishes its sleep; the queued ones are
     * completed unhandled. */
    assert_true(clock_mono_ms() - start >= sleep_ms - 100);
    assert_int_equal(atomic_load(&f.ctx.handled), CONNS + 1);
    assert_int_equal(atomic_load(&auth_state_damaged), 0);
    for (int c = 0; c < CONNS; c++) {
        assert_true(test_wait_closed(fds[c]));
        close(fds[c]);
    }
    fixture_finish(&f);
}

/* Listener host forms: a name, the IPv4 wildcard, the dual-stack
 * wildcard and the empty host all accept loopback IPv4 clients. */
static void test_listener_host_forms(void **state)
{
    (void)state;
    const char *hosts[] = {"localhost", "0.0.0.0", "::", ""};
    for (size_t h = 0; h < sizeof(hosts) / sizeof(hosts[0]); h++) {
        struct fixture f;
        struct net_config cfg;
        test_config(&cfg);
        snprintf(cfg.listeners[0].host, sizeof(cfg.listeners[0].host), "%s", hosts[h]);
        fixture_start(&f, &cfg);
        int fd = test_connect(f.port);
        if (fd < 0 && strcmp(hosts[h], "localhost") == 0) {
            /* localhost may resolve to ::1 only on this machine */
            fixture_finish(&f);
            continue;
        }
        assert_true(fd >= 0);
        assert_int_equal(test_send_request(fd, (int32_t)h, TEST_CMD_ECHO, NULL, 0), 0);
        expect_echo(fd, (int32_t)h, NULL, 0);
        close(fd);
        fixture_finish(&f);
    }
}

static void test_start_rejects_bad_config_and_busy_port(void **state)
{
    (void)state;
    struct test_ctx ctx;
    test_ctx_init(&ctx);
    struct net_config cfg;
    struct net_server *server = NULL;
    char err[256];

    test_config(&cfg);
    cfg.num_io_threads = 0;
    assert_int_equal(net_server_start(&cfg, test_handler, &ctx, &server, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "num.io.threads"));
    assert_null(server);

    test_config(&cfg);
    cfg.socket_request_max_bytes = 0;
    assert_int_equal(net_server_start(&cfg, test_handler, &ctx, &server, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "socket.request.max.bytes"));

    test_config(&cfg);
    cfg.sasl_server_max_receive_size = 0;
    assert_int_equal(net_server_start(&cfg, test_handler, &ctx, &server, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "sasl.server.max.receive.size"));

    test_config(&cfg);
    assert_int_equal(net_server_start(&cfg, test_handler, &ctx, &server, err, sizeof(err)), 0);
    struct net_config clash;
    test_config(&clash);
    clash.listeners[0].port = net_server_bound_port(server, 0);
    struct net_server *second = NULL;
    assert_int_equal(net_server_start(&clash, test_handler, &ctx, &second, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "PLAINTEXT"));
    assert_null(second);
    assert_int_equal(net_server_bound_port(server, 1), -1);
    net_server_free(server);
    test_ctx_finish(&ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pipelined_requests_answer_in_order),
        cmocka_unit_test(test_large_frames_in_kept_buffers),
        cmocka_unit_test(test_splice_response_is_byte_exact),
        cmocka_unit_test(test_bad_size_prefix_closes_only_that_connection),
        cmocka_unit_test(test_peer_closing_mid_frame_is_contained),
        cmocka_unit_test(test_idle_connection_is_closed),
        cmocka_unit_test(test_completion_from_another_thread),
        cmocka_unit_test(test_peer_closing_cancels_held_request),
        cmocka_unit_test(test_throttle_delays_next_read),
        cmocka_unit_test(test_full_queue_applies_backpressure),
        cmocka_unit_test(test_no_response_and_close_after),
        cmocka_unit_test(test_stop_completes_inflight_requests),
        cmocka_unit_test(test_stop_gives_up_after_grace),
        cmocka_unit_test(test_stop_names_unread_response),
        cmocka_unit_test(test_stop_while_workers_hold_requests),
        cmocka_unit_test(test_listener_host_forms),
        cmocka_unit_test(test_start_rejects_bad_config_and_busy_port),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
