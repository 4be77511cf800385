/* The outbound client against a scripted peer on a loopback socket, for
 * what no cairnd can show: a broker that refuses ApiVersions v3 (the
 * client retries at the version the broker lists, as Kafka's clients do),
 * reached through a host name; a peer that answers with the wrong
 * correlation id (the connection closes and the request fails with a
 * network error); and a peer that accepts but never answers (the
 * connection setup timeout fires and the client backs off and retries);
 * and a refused connection failing a fail_fast request at once. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "net/client.h"
#include "net/client_frame.h"
#include "protocol/generated/api_versions_response.h"
#include "protocol/generated/metadata_request.h"
#include "protocol/generated/metadata_response.h"
#include "protocol/generated/request_header.h"
#include "util/clock.h"

#define KEY_METADATA 3
#define KEY_API_VERSIONS 18

static int listen_loopback(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 8), 0);
    socklen_t len = sizeof a;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

static int read_full(int fd, void *buf, size_t len)
{
    for (size_t got = 0; got < len;) {
        ssize_t n = read(fd, (uint8_t *)buf + got, len - got);
        if (n <= 0)
            return -1;
        got += (size_t)n;
    }
    return 0;
}

/* Reads one request frame and returns its header (frame freed). */
static int read_request(int fd, struct request_header *h)
{
    uint8_t size_buf[4];
    if (read_full(fd, size_buf, 4) != 0)
        return -1;
    size_t size = (size_t)size_buf[0] << 24 | (size_t)size_buf[1] << 16 | (size_t)size_buf[2] << 8 | size_buf[3];
    uint8_t *frame = malloc(size);
    if (!frame || read_full(fd, frame, size) != 0) {
        free(frame);
        return -1;
    }
    int16_t key = (int16_t)(frame[0] << 8 | frame[1]);
    int16_t version = (int16_t)(frame[2] << 8 | frame[3]);
    struct kafka_reader r;
    kafka_reader_init(&r, frame, size);
    int rc = request_header_decode(h, &r, kafka_request_header_version(key, version), NULL);
    h->client_id.data = NULL; /* points into the freed frame */
    free(frame);
    return rc;
}

typedef int (*body_encode_fn)(const void *msg, struct kafka_writer *w, int16_t version);

/* Writes a response frame: header v0/v1 as the API version asks, then body. */
static void write_response(int fd, int16_t key, int16_t version, int16_t body_version, int32_t correlation_id,
                           body_encode_fn encode, const void *body)
{
    struct kafka_writer w;
    kafka_writer_init(&w, 256);
    size_t at = kafka_writer_reserve(&w, 4);
    kafka_write_int32(&w, correlation_id);
    if (kafka_response_header_version(key, version) >= 1)
        kafka_write_uvarint(&w, 0);
    assert_int_equal(encode(body, &w, body_version), 0);
    kafka_writer_patch_int32(&w, at, (int32_t)(w.len - 4));
    assert_int_equal(write(fd, w.buf, w.len), (ssize_t)w.len);
    kafka_writer_free(&w);
}

static int encode_api_versions(const void *msg, struct kafka_writer *w, int16_t version)
{
    return api_versions_response_encode(msg, w, version);
}

static int encode_metadata(const void *msg, struct kafka_writer *w, int16_t version)
{
    return metadata_response_encode(msg, w, version);
}

/* ---- the scripted peers ---- */

struct peer {
    int listen_fd;
    int port;
    int16_t seen_versions[4]; /* versions of the requests it read */
    int seen;
    bool wrong_correlation;
    pthread_t thread;
};

static void answer_api_versions(int fd, int16_t version, int32_t correlation_id, int16_t error,
                                int16_t api_versions_max)
{
    struct api_versions_response_api_version keys[2] = {
        {.api_key = KEY_API_VERSIONS, .min_version = 0, .max_version = api_versions_max},
        {.api_key = KEY_METADATA, .min_version = 0, .max_version = 4},
    };
    struct api_versions_response r;
    api_versions_response_init(&r);
    r.error_code = error;
    r.api_keys = keys;
    r.api_keys_count = error ? 1 : 2;
    /* An UNSUPPORTED_VERSION answer uses the v0 layout, whatever was asked. */
    write_response(fd, KEY_API_VERSIONS, version, error ? 0 : version, correlation_id, encode_api_versions, &r);
}

/* A broker whose ApiVersions stops at v2, then one Metadata v4 answer. */
static void *old_broker_main(void *arg)
{
    struct peer *p = arg;
    int fd = accept(p->listen_fd, NULL, NULL);
    struct request_header h;
    while (fd >= 0 && p->seen < 3 && read_request(fd, &h) == 0) {
        p->seen_versions[p->seen++] = h.request_api_version;
        if (h.request_api_key == KEY_API_VERSIONS) {
            answer_api_versions(fd, h.request_api_version, h.correlation_id, h.request_api_version > 2 ? 35 : 0, 2);
            continue;
        }
        struct metadata_response_metadata_response_broker b = {
            .node_id = 7, .host = kafka_str_from_cstr("old"), .port = 1, .rack = {NULL, -1}};
        struct metadata_response m;
        metadata_response_init(&m);
        m.brokers = &b;
        m.brokers_count = 1;
        int32_t corr = p->wrong_correlation ? h.correlation_id + 1 : h.correlation_id;
        write_response(fd, KEY_METADATA, h.request_api_version, h.request_api_version, corr, encode_metadata, &m);
    }
    if (fd >= 0) {
        /* Hold the connection until the client closes it. */
        char c;
        while (read(fd, &c, 1) > 0) {
        }
        close(fd);
    }
    return NULL;
}

static void peer_start(struct peer *p, bool wrong_correlation)
{
    memset(p, 0, sizeof *p);
    p->wrong_correlation = wrong_correlation;
    p->listen_fd = listen_loopback(&p->port);
    assert_int_equal(pthread_create(&p->thread, NULL, old_broker_main, p), 0);
}

static void peer_stop(struct peer *p)
{
    pthread_join(p->thread, NULL);
    close(p->listen_fd);
}

/* ---- client side ---- */

struct outcome {
    pthread_mutex_t mu;
    int completions;
    enum net_client_status status;
    int16_t version;
    int32_t broker_node;
};

static void on_done(struct net_client_result *r, void *ctx)
{
    struct outcome *o = ctx;
    pthread_mutex_lock(&o->mu);
    o->completions++;
    o->status = r->status;
    o->version = r->api_version;
    if (r->response)
        o->broker_node = ((struct metadata_response *)r->response)->brokers[0].node_id;
    pthread_mutex_unlock(&o->mu);
}

static void wait_outcome(struct outcome *o, int64_t timeout_ms)
{
    int64_t end = clock_mono_ms() + timeout_ms;
    for (;;) {
        pthread_mutex_lock(&o->mu);
        int n = o->completions;
        pthread_mutex_unlock(&o->mu);
        if (n > 0)
            return;
        if (clock_mono_ms() > end)
            fail_msg("no completion within %lld ms", (long long)timeout_ms);
        usleep(2000);
    }
}

static struct net_client *client_to(const char *host, int port, const struct net_client_config *cfg)
{
    struct net_client *c;
    char err[160];
    assert_int_equal(net_client_create(cfg, &c, err, sizeof err), 0);
    assert_int_equal(net_client_add_node(c, 7, host, port), 0);
    return c;
}

static void send_metadata(struct net_client *c, struct metadata_request *md, int64_t timeout_ms, struct outcome *o)
{
    metadata_request_init(md);
    struct net_client_request req = {
        .node_id = 7,
        .api_key = KEY_METADATA,
        .pinned_version = -1,
        .body = md,
        .timeout_ms = timeout_ms,
        .done = on_done,
        .ctx = o,
    };
    char err[160];
    assert_int_equal(net_client_send(c, &req, err, sizeof err), 0);
}

/* One Metadata request through a fresh client to a scripted peer; fills
 * the outcome and the node's stats at completion. */
static void metadata_via_peer(const char *host, struct peer *p, bool wrong_correlation, struct outcome *o,
                              struct net_client_node_stats *st)
{
    peer_start(p, wrong_correlation);
    struct net_client_config cfg;
    net_client_config_defaults(&cfg);
    struct net_client *c = client_to(host, p->port, &cfg);
    struct metadata_request md;
    send_metadata(c, &md, 5000, o);
    wait_outcome(o, 5000);
    assert_int_equal(net_client_node_stats(c, 7, st), 0);
    net_client_destroy(c);
    peer_stop(p);
}

static void test_api_versions_falls_back_to_the_listed_version(void **state)
{
    (void)state;
    struct peer p;
    struct outcome o = {.mu = PTHREAD_MUTEX_INITIALIZER};
    struct net_client_node_stats st;
    /* A host name: looked up off the loop; if it gives ::1 first, the
     * refused address moves on to 127.0.0.1, where the peer listens. */
    metadata_via_peer("localhost", &p, false, &o, &st);
    assert_int_equal(o.status, NET_CLIENT_OK);
    assert_int_equal(o.version, 4); /* the broker's max, below the codecs' */
    assert_int_equal(o.broker_node, 7);
    assert_int_equal(p.seen, 3);
    assert_int_equal(p.seen_versions[0], 3); /* ApiVersions v3 first */
    assert_int_equal(p.seen_versions[1], 2); /* then the version it listed */
    assert_int_equal(p.seen_versions[2], 4); /* Metadata */
    assert_int_equal(st.api_versions_version, 2);
    assert_int_equal(st.connections, 1);
}

static void test_wrong_correlation_id_fails_the_request(void **state)
{
    (void)state;
    struct peer p;
    struct outcome o = {.mu = PTHREAD_MUTEX_INITIALIZER};
    struct net_client_node_stats st;
    metadata_via_peer("127.0.0.1", &p, true, &o, &st);
    assert_int_equal(o.status, NET_CLIENT_NETWORK_ERROR);
    assert_false(st.ready); /* the connection was closed */
}

static void test_setup_timeout_when_the_peer_stays_silent(void **state)
{
    (void)state;
    /* Listening but never accepting: TCP connects, ApiVersions gets no answer. */
    int port;
    int fd = listen_loopback(&port);
    struct net_client_config cfg;
    net_client_config_defaults(&cfg);
    cfg.connection_setup_timeout_ms = 200;
    cfg.reconnect_backoff_ms = 20;
    struct net_client *c = client_to("127.0.0.1", port, &cfg);
    struct metadata_request md;
    struct outcome o = {.mu = PTHREAD_MUTEX_INITIALIZER};
    int64_t start = clock_mono_ms();
    send_metadata(c, &md, 1200, &o);
    wait_outcome(&o, 5000);
    int64_t took = clock_mono_ms() - start;
    assert_int_equal(o.status, NET_CLIENT_TIMED_OUT);
    assert_true(took >= 1100 && took < 3000);
    struct net_client_node_stats st;
    assert_int_equal(net_client_node_stats(c, 7, &st), 0);
    assert_false(st.ready);
    assert_true(st.connect_failures >= 2); /* each attempt timed out at 200 ms */
    assert_true(st.connect_attempts >= st.connect_failures);
    assert_int_equal(st.connections, 0);
    net_client_destroy(c);
    close(fd);
}

struct misuse {
    struct net_client *client;
    struct outcome outcome;
};

static void destroy_from_callback(struct net_client_result *r, void *ctx)
{
    struct misuse *m = ctx;
    net_client_destroy(m->client); /* refused: this is the client's own thread */
    on_done(r, &m->outcome);
}

static void test_destroy_from_a_callback_is_refused(void **state)
{
    (void)state;
    int port;
    close(listen_loopback(&port)); /* nothing listens there now */
    struct net_client_config cfg;
    net_client_config_defaults(&cfg);
    struct misuse m = {.outcome = {.mu = PTHREAD_MUTEX_INITIALIZER}};
    m.client = client_to("127.0.0.1", port, &cfg);
    struct metadata_request md;
    metadata_request_init(&md);
    struct net_client_request req = {
        .node_id = 7,
        .api_key = KEY_METADATA,
        .pinned_version = -1,
        .body = &md,
        .timeout_ms = 100,
        .done = destroy_from_callback,
        .ctx = &m,
    };
    char err[160];
    assert_int_equal(net_client_send(m.client, &req, err, sizeof err), 0);
    wait_outcome(&m.outcome, 5000);
    assert_int_equal(m.outcome.status, NET_CLIENT_TIMED_OUT);
    net_client_destroy(m.client);
    assert_int_equal(m.outcome.completions, 1);
}

/* A refused connection: a plain request waits for the next attempts until
 * its timeout, one with fail_fast fails at the first refusal. */
static void test_fail_fast_on_a_refused_connection(void **state)
{
    (void)state;
    int port;
    close(listen_loopback(&port)); /* nothing listens there now */
    struct net_client_config cfg;
    net_client_config_defaults(&cfg);
    for (int fast = 0; fast < 2; fast++) {
        struct net_client *c = client_to("127.0.0.1", port, &cfg);
        struct outcome o = {.mu = PTHREAD_MUTEX_INITIALIZER};
        struct metadata_request md;
        metadata_request_init(&md);
        struct net_client_request req = {
            .node_id = 7,
            .api_key = KEY_METADATA,
            .pinned_version = -1,
            .body = &md,
            .timeout_ms = 1500,
            .done = on_done,
            .ctx = &o,
            .fail_fast = fast,
        };
        char err[160];
        int64_t start = clock_mono_ms();
        assert_int_equal(net_client_send(c, &req, err, sizeof err), 0);
        wait_outcome(&o, 5000);
        int64_t took = clock_mono_ms() - start;
        assert_int_equal(o.status, fast ? NET_CLIENT_NETWORK_ERROR : NET_CLIENT_TIMED_OUT);
        assert_true(fast ? took < 1000 : took >= 1400);
        net_client_destroy(c);
    }
}

/* After a refused connection the node waits out its reconnect backoff
 * (here 4 s at least, 0.8 x 5 s); a fail_fast request sent meanwhile fails
 * at once instead of waiting for the next attempt to be refused. */
static void test_fail_fast_during_reconnect_backoff(void **state)
{
    (void)state;
    int port;
    close(listen_loopback(&port)); /* nothing listens there now */
    struct net_client_config cfg;
    net_client_config_defaults(&cfg);
    cfg.reconnect_backoff_ms = 5000;
    cfg.reconnect_backoff_max_ms = 5000;
    struct net_client *c = client_to("127.0.0.1", port, &cfg);
    for (int attempt = 0; attempt < 2; attempt++) {
        struct outcome o = {.mu = PTHREAD_MUTEX_INITIALIZER};
        struct metadata_request md;
        metadata_request_init(&md);
        struct net_client_request req = {
            .node_id = 7,
            .api_key = KEY_METADATA,
            .pinned_version = -1,
            .body = &md,
            .timeout_ms = 10000,
            .done = on_done,
            .ctx = &o,
            .fail_fast = true,
        };
        char err[160];
        int64_t start = clock_mono_ms();
        assert_int_equal(net_client_send(c, &req, err, sizeof err), 0);
        wait_outcome(&o, 12000);
        int64_t took = clock_mono_ms() - start;
        assert_int_equal(o.status, NET_CLIENT_NETWORK_ERROR);
        assert_true(took < 3000);
    }
    net_client_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api_versions_falls_back_to_the_listed_version),
        cmocka_unit_test(test_wrong_correlation_id_fails_the_request),
        cmocka_unit_test(test_setup_timeout_when_the_peer_stays_silent),
        cmocka_unit_test(test_destroy_from_a_callback_is_refused),
        cmocka_unit_test(test_fail_fast_on_a_refused_connection),
        cmocka_unit_test(test_fail_fast_during_reconnect_backoff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
