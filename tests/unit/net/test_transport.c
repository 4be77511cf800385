/* The connection transport seam and what a completion may change on its
 * connection: a test transport (bytes XORed with a key, handed out in small
 * chunks, counted) installed by a listener or swapped in on a live
 * connection; principals and KIP-368 session expiry set by a handler. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "net/net_internal.h"
#include "net_test_support.h"
#include "net_test_fixture.h"

enum {
    CMD_SWAP = 7,   /* echo; the connection then speaks the XOR transport */
    CMD_LOGIN = 8,  /* echo; the connection acts as User:alice, args: int32 session_ms */
    CMD_WHOAMI = 9, /* body: "type:name/protocol" of the request */
};

#define XOR_KEY 0x5a
#define XOR_CHUNK 1000 /* recv hands out at most this much, so bytes wait inside */
#define XOR_BUF (64 * 1024)

struct xor_stats {
    atomic_long recv_bytes, sent_bytes, file_bytes, file_calls, opened, closed;
};
static struct xor_stats stats;

struct xor_state {
    uint8_t in[XOR_BUF];
    size_t in_start, in_end;
};

static void xor_bytes(uint8_t *dst, const uint8_t *src, size_t len)
{
    for (size_t i = 0; i < len; i++)
        dst[i] = src[i] ^ XOR_KEY;
}

static ssize_t xor_recv(struct net_transport *t, void *buf, size_t len)
{
    struct xor_state *s = t->state;
    if (s->in_start == s->in_end) {
        ssize_t n = recv(t->fd, s->in, sizeof(s->in), 0);
        if (n <= 0)
            return n;
        s->in_start = 0;
        s->in_end = (size_t)n;
    }
    size_t give = s->in_end - s->in_start;
    if (give > len)
        give = len;
    if (give > XOR_CHUNK)
        give = XOR_CHUNK;
    xor_bytes(buf, s->in + s->in_start, give);
    s->in_start += give;
    atomic_fetch_add(&stats.recv_bytes, (long)give);
    return (ssize_t)give;
}

/* XOR is per byte, so a partial send is simply retried from where it
 * stopped with the same result. */
static ssize_t xor_send_plain(int fd, const uint8_t *src, size_t len, int flags)
{
    uint8_t out[XOR_BUF];
    if (len > sizeof(out))
        len = sizeof(out);
    xor_bytes(out, src, len);
    return send(fd, out, len, MSG_NOSIGNAL | flags);
}

/* Sends from the first iovec only: a short send is always allowed. */
static ssize_t xor_send(struct net_transport *t, const struct iovec *iov, int iovcnt, int flags)
{
    (void)iovcnt;
    ssize_t n = xor_send_plain(t->fd, iov[0].iov_base, iov[0].iov_len, (flags & NET_TRANSPORT_MORE) ? MSG_MORE : 0);
    if (n > 0)
        atomic_fetch_add(&stats.sent_bytes, (long)n);
    return n;
}

static ssize_t xor_send_file(struct net_transport *t, int file_fd, int64_t pos, size_t len)
{
    uint8_t in[XOR_BUF];
    if (len > sizeof(in))
        len = sizeof(in);
    ssize_t got = pread(file_fd, in, len, (off_t)pos);
    if (got <= 0)
        return got;
    ssize_t n = xor_send_plain(t->fd, in, (size_t)got, 0);
    if (n > 0) {
        atomic_fetch_add(&stats.file_bytes, (long)n);
        atomic_fetch_add(&stats.file_calls, 1);
    }
    return n;
}

static size_t xor_pending(struct net_transport *t)
{
    struct xor_state *s = t->state;
    return s->in_end - s->in_start;
}

static void xor_close(struct net_transport *t)
{
    free(t->state);
    atomic_fetch_add(&stats.closed, 1);
}

static const struct net_transport_ops xor_ops = {
    .name = "xor-test",
    .recv = xor_recv,
    .send = xor_send,
    .send_file = xor_send_file,
    .pending = xor_pending,
    .close = xor_close,
};

static void *xor_state_new(void)
{
    atomic_fetch_add(&stats.opened, 1);
    return calloc(1, sizeof(struct xor_state));
}

/* A listener's factory, as a TLS layer would install its own. */
static int xor_init(void *ctx, struct net_transport *t)
{
    (void)ctx;
    if (t->ops != &net_plain_transport_ops)
        return -1; /* refuses the connection, which fails the test */
    t->ops = &xor_ops;
    t->state = xor_state_new();
    return t->state ? 0 : -1;
}

static void transport_test_handler(struct net_request *req, void *arg)
{
    int command = req->frame_len >= 5 ? req->frame[4] : TEST_CMD_ECHO;
    if (command == CMD_SWAP) {
        net_request_set_transport(req, &xor_ops, xor_state_new());
    } else if (command == CMD_LOGIN) {
        if (net_request_set_principal(req, "User", "alice") != 0) {
            net_request_complete(req, NULL, 0, true); /* the test sees the close */
            return;
        }
        int32_t session_ms = test_arg(req, 0);
        if (session_ms > 0)
            net_request_set_session_expiry(req, clock_mono_ms() + session_ms);
    } else if (command == CMD_WHOAMI) {
        char who[700];
        int len = snprintf(who, sizeof(who), "%s:%s/%d", req->principal_type, req->principal_name,
                           req->security_protocol);
        struct kafka_writer w;
        kafka_writer_init(&w, 64);
        size_t size_at = kafka_writer_reserve(&w, 4);
        kafka_write_raw(&w, req->frame, 4);
        kafka_write_raw(&w, who, (size_t)len);
        kafka_writer_patch_int32(&w, size_at, (int32_t)(w.len - 4));
        net_request_complete(req, &w, 0, false);
        return;
    }
    test_handler(req, arg);
}

static void fixture_start(struct fixture *f, const struct net_config *cfg)
{
    memset(&stats, 0, sizeof(stats));
    fixture_start_with(f, cfg, transport_test_handler);
}

/* A server with the default test config and one client connected to it. */
static int start_and_connect(struct fixture *f)
{
    struct net_config cfg;
    test_config(&cfg);
    fixture_start(f, &cfg);
    int fd = test_connect(f->port);
    assert_true(fd >= 0);
    return fd;
}

/* The client's half of the XOR transport. */
static int xor_client_send(int fd, const uint8_t *data, size_t len)
{
    uint8_t *out = malloc(len);
    xor_bytes(out, data, len);
    int rc = test_send_all(fd, out, len);
    free(out);
    return rc;
}

static int xor_client_recv(int fd, uint8_t *data, size_t len)
{
    if (test_recv_all(fd, data, len) != 0)
        return -1;
    xor_bytes(data, data, len);
    return 0;
}

/* Reads one XORed response: correlation id and body (body_len bytes). */
static void xor_expect_response(int fd, int32_t correlation_id, const uint8_t *body, size_t body_len)
{
    uint8_t head[8];
    assert_int_equal(xor_client_recv(fd, head, 8), 0);
    assert_int_equal(test_be32(head), body_len + 4);
    assert_int_equal((int32_t)test_be32(head + 4), correlation_id);
    uint8_t *got = malloc(body_len + 1);
    if (body_len > 0)
        assert_int_equal(xor_client_recv(fd, got, body_len), 0);
    assert_memory_equal(got, body, body_len);
    free(got);
}

/* A file for TEST_CMD_SPLICE; returns its content (caller frees). */
static uint8_t *make_splice_file(struct test_ctx *ctx, size_t bytes)
{
    char path[] = "/tmp/cairn-transport-test-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    uint8_t *content = malloc(bytes);
    for (size_t i = 0; i < bytes; i++)
        content[i] = (uint8_t)(i * 131 + 7);
    assert_int_equal(write(fd, content, bytes), (ssize_t)bytes);
    ctx->splice_fd = fd;
    return content;
}

/* A listener's transport carries every byte of pipelined requests (one
 * larger than the input buffer) and of their responses, file regions
 * included, and is closed with its connection. */
static void test_listener_transport_carries_everything(void **state)
{
    (void)state;
    struct fixture f;
    struct net_config cfg;
    test_config(&cfg);
    cfg.listeners[0].security_protocol = NET_SECURITY_SSL; /* allowed: it has a transport */
    cfg.listeners[0].transport_init = xor_init;
    fixture_start(&f, &cfg);
    uint8_t *content = make_splice_file(&f.ctx, 512 * 1024);

    enum { BIG = 40000 };
    uint8_t *payload = malloc(BIG);
    for (size_t i = 0; i < BIG; i++)
        payload[i] = (uint8_t)(i * 7);
    uint8_t *wire = malloc(BIG + 256);
    size_t len = test_build_request(wire, 1, TEST_CMD_ECHO, NULL, 0, "hello", 5);
    len += test_build_request(wire + len, 2, TEST_CMD_ECHO, NULL, 0, payload, BIG);
    int32_t args[4] = {1000, 200000, 300000, 100001};
    len += test_build_request(wire + len, 3, TEST_CMD_SPLICE, args, 4, NULL, 0);
    len += test_build_request(wire + len, 4, CMD_WHOAMI, NULL, 0, NULL, 0);

    int fd = test_connect(f.port);
    assert_true(fd >= 0);
    assert_int_equal(xor_client_send(fd, wire, len), 0);
    xor_expect_response(fd, 1, (const uint8_t *)"hello", 5);
    xor_expect_response(fd, 2, payload, BIG);
    uint8_t *expected = malloc(400000);
    size_t body_len = test_splice_body(expected, content, args[0], args[1], args[2], args[3]);
    xor_expect_response(fd, 3, expected, body_len);
    const char *who = "User:ANONYMOUS/1";
    xor_expect_response(fd, 4, (const uint8_t *)who, strlen(who));

    assert_int_equal(atomic_load(&stats.recv_bytes), (long)len);
    size_t response_bytes = 8 + 5 + 8 + BIG + 8 + body_len + 8 + strlen(who);
    /* The loop thread counts a send after send() returns, which may be
     * after the client already read those bytes. */
    for (int i = 0; i < 200 && atomic_load(&stats.sent_bytes) + atomic_load(&stats.file_bytes) < (long)response_bytes;
         i++)
        usleep(10 * 1000);
    assert_int_equal(atomic_load(&stats.sent_bytes) + atomic_load(&stats.file_bytes), (long)response_bytes);
    assert_int_equal(atomic_load(&stats.file_bytes), args[1] + args[3]);
    assert_true(atomic_load(&stats.file_calls) >= 2);

    close(fd);
    fixture_finish(&f);
    assert_int_equal(atomic_load(&stats.opened), 1);
    assert_int_equal(atomic_load(&stats.closed), 1);
    free(expected);
    free(wire);
    free(payload);
    free(content);
}

/* A completion swaps the transport of a live connection: its own response
 * is still plain, everything after (a file-region response too) goes
 * through the new transport. */
static void test_transport_swapped_on_live_connection(void **state)
{
    (void)state;
    struct fixture f;
    int fd = start_and_connect(&f);
    uint8_t *content = make_splice_file(&f.ctx, 256 * 1024);
    assert_int_equal(test_send_request(fd, 10, TEST_CMD_ECHO, NULL, 0), 0);
    uint8_t body[256];
    int32_t id = 0;
    assert_int_equal(test_read_response(fd, &id, body, sizeof(body)), 0);
    assert_int_equal(id, 10);
    assert_int_equal(atomic_load(&stats.opened), 0);

    assert_int_equal(test_send_request(fd, 11, CMD_SWAP, NULL, 0), 0);
    assert_int_equal(test_read_response(fd, &id, body, sizeof(body)), 0);
    assert_int_equal(id, 11);
    assert_int_equal(atomic_load(&stats.sent_bytes), 0); /* the swap's own response was plain */

    uint8_t wire[128];
    int32_t args[4] = {5, 70000, 100000, 3};
    size_t len = test_build_request(wire, 12, TEST_CMD_SPLICE, args, 4, NULL, 0);
    assert_int_equal(xor_client_send(fd, wire, len), 0);
    uint8_t *expected = malloc(100000);
    size_t body_len = test_splice_body(expected, content, args[0], args[1], args[2], args[3]);
    xor_expect_response(fd, 12, expected, body_len);
    assert_int_equal(atomic_load(&stats.file_bytes), args[1] + args[3]);

    len = test_build_request(wire, 13, TEST_CMD_ECHO, NULL, 0, "after", 5);
    assert_int_equal(xor_client_send(fd, wire, len), 0);
    xor_expect_response(fd, 13, (const uint8_t *)"after", 5);
    assert_int_equal(atomic_load(&stats.opened), 1);
    assert_int_equal(atomic_load(&stats.closed), 0);

    close(fd);
    fixture_finish(&f);
    assert_int_equal(atomic_load(&stats.closed), 1);
    free(expected);
    free(content);
}

/* Bytes sent past a transport change, before its response, were read
 * through the old transport: the connection is closed, not confused. */
static void test_bytes_pipelined_across_swap_close(void **state)
{
    (void)state;
    struct fixture f;
    int fd = start_and_connect(&f);
    uint8_t wire[128];
    size_t len = test_build_request(wire, 20, CMD_SWAP, NULL, 0, NULL, 0);
    len += test_build_request(wire + len, 21, TEST_CMD_ECHO, NULL, 0, NULL, 0);
    assert_int_equal(test_send_all(fd, wire, len), 0);
    uint8_t body[64];
    int32_t id = 0;
    assert_int_equal(test_read_response(fd, &id, body, sizeof(body)), 0);
    assert_int_equal(id, 20);
    assert_true(test_wait_closed(fd));
    close(fd);
    fixture_finish(&f);
    assert_int_equal(atomic_load(&stats.opened), 1);
    assert_int_equal(atomic_load(&stats.closed), 1); /* the never-installed state is freed */
}

static void expect_whoami(int fd, int32_t correlation_id, const char *who)
{
    assert_int_equal(test_send_request(fd, correlation_id, CMD_WHOAMI, NULL, 0), 0);
    char body[700];
    int32_t id = 0;
    int64_t n = test_read_response(fd, &id, (uint8_t *)body, sizeof(body) - 1);
    assert_true(n >= 0);
    body[n] = '\0';
    assert_int_equal(id, correlation_id);
    assert_string_equal(body, who);
}

/* A completion that sets the principal is seen by the next request of
 * that connection, and by no other connection. */
static void test_completion_changes_principal(void **state)
{
    (void)state;
    struct fixture f;
    int fd = start_and_connect(&f), other = test_connect(f.port);
    assert_true(other >= 0);
    expect_whoami(fd, 1, "User:ANONYMOUS/0");
    int32_t no_expiry = 0;
    assert_int_equal(test_send_request(fd, 2, CMD_LOGIN, &no_expiry, 1), 0);
    uint8_t body[64];
    int32_t id = 0;
    assert_int_equal(test_read_response(fd, &id, body, sizeof(body)), 4);
    expect_whoami(fd, 3, "User:alice/0");
    expect_whoami(other, 4, "User:ANONYMOUS/0");
    close(fd);
    close(other);
    fixture_finish(&f);
}

/* Frames whose first two bytes (the api key) are 17 / 36. */
#define SASL_HANDSHAKE_ID ((int32_t)0x00110001)
#define SASL_AUTHENTICATE_ID ((int32_t)0x00240002)

/* KIP-368: after the session expires only SaslHandshake and
 * SaslAuthenticate are served; any other request closes the connection. */
static void test_expired_session_closes_on_next_request(void **state)
{
    (void)state;
    struct fixture f;
    int fd = start_and_connect(&f);
    int32_t session_ms = 1000; /* long enough for a loaded machine to ask once in time */
    assert_int_equal(test_send_request(fd, 1, CMD_LOGIN, &session_ms, 1), 0);
    uint8_t body[64];
    int32_t id = 0;
    assert_int_equal(test_read_response(fd, &id, body, sizeof(body)), 4);
    expect_whoami(fd, 2, "User:alice/0"); /* not expired yet */
    test_sleep_ms(1300);
    expect_whoami(fd, SASL_HANDSHAKE_ID, "User:alice/0");
    expect_whoami(fd, SASL_AUTHENTICATE_ID, "User:alice/0");
    assert_int_equal(test_send_request(fd, 3, CMD_WHOAMI, NULL, 0), 0);
    assert_true(test_wait_closed(fd));
    close(fd);
    fixture_finish(&f);
    assert_int_equal(atomic_load(&f.ctx.handled), 1); /* only LOGIN reached test_handler */
}

static void test_session_expiry_rule(void **state)
{
    (void)state;
    const uint8_t produce[] = {0, 0, 0, 9};
    const uint8_t handshake[] = {0, 17, 0, 1};
    const uint8_t authenticate[] = {0, 36, 0, 2};
    assert_false(net_session_expired_for(0, 1000, produce, 4));    /* no session lifetime */
    assert_false(net_session_expired_for(1001, 1000, produce, 4)); /* not yet */
    assert_true(net_session_expired_for(1000, 1000, produce, 4));
    assert_false(net_session_expired_for(1000, 5000, handshake, 4));
    assert_false(net_session_expired_for(1000, 5000, authenticate, 4));
    assert_true(net_session_expired_for(1000, 5000, produce, 1)); /* no api key at all */
}

/* A listener whose protocol needs TLS or SASL is refused when nothing
 * provides its transport, instead of being served as plaintext. */
static void test_non_plaintext_listener_without_transport_is_refused(void **state)
{
    (void)state;
    struct test_ctx ctx;
    test_ctx_init(&ctx);
    struct net_config cfg;
    test_config(&cfg);
    cfg.listeners[0].security_protocol = NET_SECURITY_SASL_SSL;
    struct net_server *server = NULL;
    char err[256] = "";
    assert_int_equal(net_server_start(&cfg, transport_test_handler, &ctx, &server, err, sizeof(err)), -1);
    assert_null(server);
    assert_string_equal(err, "listener PLAINTEXT: security protocol SASL_SSL is not supported (only "
                             "PLAINTEXT and SASL_PLAINTEXT listeners can be served)");
    test_ctx_finish(&ctx);
    assert_string_equal(net_security_protocol_name(NET_SECURITY_SASL_PLAINTEXT), "SASL_PLAINTEXT");
    assert_string_equal(net_security_protocol_name(9), "UNKNOWN");
}

/* Names that do not fit are refused, never truncated into another name. */
static void test_principal_that_does_not_fit_is_refused(void **state)
{
    (void)state;
    struct net_request_impl req;
    memset(&req, 0, sizeof(req));
    char long_name[NET_PRINCIPAL_NAME_MAX + 1];
    memset(long_name, 'a', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    assert_int_equal(net_request_set_principal(&req.pub, "User", long_name), -1);
    assert_int_equal(net_request_set_principal(&req.pub, "", "bob"), -1);
    assert_null(req.change);
    long_name[NET_PRINCIPAL_NAME_MAX - 1] = '\0';
    assert_int_equal(net_request_set_principal(&req.pub, "User", long_name), 0);
    assert_string_equal(req.change->principal_name, long_name);
    free(req.change);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_listener_transport_carries_everything),
        cmocka_unit_test(test_transport_swapped_on_live_connection),
        cmocka_unit_test(test_bytes_pipelined_across_swap_close),
        cmocka_unit_test(test_completion_changes_principal),
        cmocka_unit_test(test_expired_session_closes_on_next_request),
        cmocka_unit_test(test_session_expiry_rule),
        cmocka_unit_test(test_non_plaintext_listener_without_transport_is_refused),
        cmocka_unit_test(test_principal_that_does_not_fit_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
