/* Metrics registry and the /metrics HTTP endpoint. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "metrics/metrics.h"

static void test_register_and_render(void **state)
{
    (void)state;
    struct metrics_metric *a = metrics_register(METRICS_COUNTER, "test_requests_total", "api=\"Produce\"", "Requests.");
    struct metrics_metric *b = metrics_register(METRICS_COUNTER, "test_requests_total", "api=\"Fetch\"", "Requests.");
    struct metrics_metric *g = metrics_register(METRICS_GAUGE, "test_connections", NULL, "Open connections.");
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(g);
    assert_ptr_equal(metrics_register(METRICS_COUNTER, "test_requests_total", "api=\"Produce\"", "x"), a);
    assert_null(metrics_register(METRICS_GAUGE, "test_requests_total", "api=\"Other\"", "kind clash"));
    assert_null(metrics_register(METRICS_COUNTER, "9bad", NULL, "leading digit"));
    assert_null(metrics_register(METRICS_COUNTER, "bad-name", NULL, "dash"));
    metrics_add(a, 5);
    metrics_add(a, 2);
    metrics_add(b, 1);
    metrics_set(g, 42);
    metrics_set(g, 17);
    assert_int_equal(metrics_value(a), 7);
    assert_int_equal(metrics_value(g), 17);

    char *text = NULL;
    size_t len = 0;
    assert_int_equal(metrics_render(&text, &len), 0);
    assert_int_equal(strlen(text), len);
    assert_non_null(strstr(text, "# TYPE test_requests_total counter\n"));
    assert_non_null(strstr(text, "test_requests_total{api=\"Produce\"} 7\n"));
    assert_non_null(strstr(text, "test_requests_total{api=\"Fetch\"} 1\n"));
    assert_non_null(strstr(text, "# TYPE test_connections gauge\ntest_connections 17\n"));
    /* One HELP line per family. */
    const char *first = strstr(text, "# HELP test_requests_total");
    assert_non_null(first);
    assert_null(strstr(first + 1, "# HELP test_requests_total"));
    free(text);
    metrics_registry_clear();
}

static void test_histogram(void **state)
{
    (void)state;
    const double bounds[] = {0.01, 0.1, 1};
    struct metrics_metric *h = metrics_register_histogram("test_latency_seconds", "op=\"get\"", "Latency.", bounds, 3);
    struct metrics_metric *plain = metrics_register_histogram("test_plain_seconds", NULL, "Plain.", bounds, 3);
    assert_non_null(h);
    assert_non_null(plain);
    assert_ptr_equal(metrics_register_histogram("test_latency_seconds", "op=\"get\"", "x", bounds, 3), h);
    const double other[] = {0.5};
    assert_null(metrics_register_histogram("test_latency_seconds", "op=\"get\"", "x", other, 1)); /* other buckets */
    const double descending[] = {1, 0.5};
    assert_null(metrics_register_histogram("test_bad_seconds", NULL, "x", descending, 2));
    assert_null(metrics_register_histogram("test_bad_seconds", NULL, "x", bounds, 0));
    assert_null(metrics_register(METRICS_HISTOGRAM, "test_bad_seconds", NULL, "needs bounds"));
    assert_null(metrics_register(METRICS_COUNTER, "test_latency_seconds", NULL, "kind clash"));
    metrics_observe(h, 0.005);
    metrics_observe(h, 0.01); /* on a bound: that bucket */
    metrics_observe(h, 0.5);
    metrics_observe(h, 7);
    metrics_add(h, 100); /* not a counter: ignored */
    metrics_observe(plain, 0.25);
    assert_int_equal(metrics_value(h), 4);

    char *text = NULL;
    size_t len = 0;
    assert_int_equal(metrics_render(&text, &len), 0);
    assert_non_null(strstr(text, "# TYPE test_latency_seconds histogram\n"));
    assert_non_null(strstr(text, "test_latency_seconds_bucket{op=\"get\",le=\"0.01\"} 2\n"
                                 "test_latency_seconds_bucket{op=\"get\",le=\"0.1\"} 2\n"
                                 "test_latency_seconds_bucket{op=\"get\",le=\"1\"} 3\n"
                                 "test_latency_seconds_bucket{op=\"get\",le=\"+Inf\"} 4\n"
                                 "test_latency_seconds_sum{op=\"get\"} 7.515\n"
                                 "test_latency_seconds_count{op=\"get\"} 4\n"));
    assert_non_null(strstr(text, "test_plain_seconds_bucket{le=\"1\"} 1\n"));
    assert_non_null(strstr(text, "test_plain_seconds_sum 0.25\ntest_plain_seconds_count 1\n"));
    free(text);
    metrics_registry_clear();
}

static char *http_get(int port, const char *request)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {
        .sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(send(fd, request, strlen(request), 0), (ssize_t)strlen(request));
    static char buf[65536];
    size_t len = 0;
    ssize_t n;
    while ((n = recv(fd, buf + len, sizeof buf - 1 - len, 0)) > 0)
        len += (size_t)n;
    buf[len] = '\0';
    close(fd);
    return buf;
}

static void test_http_endpoint(void **state)
{
    (void)state;
    struct metrics_metric *m = metrics_register(METRICS_COUNTER, "test_http_hits_total", NULL, "Hits.");
    metrics_add(m, 3);
    struct metrics_http *server = NULL;
    char err[256];
    assert_int_equal(metrics_http_start("127.0.0.1:0", &server, err, sizeof err), 0);
    int port = metrics_http_port(server);
    assert_true(port > 0);
    char *answer = http_get(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_non_null(strstr(answer, "HTTP/1.1 200 OK"));
    assert_non_null(strstr(answer, "test_http_hits_total 3\n"));
    answer = http_get(port, "GET /other HTTP/1.1\r\n\r\n");
    assert_non_null(strstr(answer, "404"));
    answer = http_get(port, "POST /metrics HTTP/1.1\r\n\r\n");
    assert_non_null(strstr(answer, "405"));
    metrics_http_stop(server);
    assert_int_not_equal(metrics_http_start("no-port-here", &server, err, sizeof err), 0);
    assert_non_null(strstr(err, "not host:port"));
    metrics_registry_clear();
}

static int connect_loopback(int port, int rcvbuf)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    if (rcvbuf > 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    /* A scraper that is never answered fails the test instead of hanging it. */
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {
        .sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One scraper thread: the whole page, its size and how long it took. */
struct scrape {
    int port;
    size_t body_bytes, content_length;
    bool ok;
    double seconds;
};

static void *scrape_page(void *arg)
{
    struct scrape *sc = arg;
    double t0 = now_s();
    int fd = connect_loopback(sc->port, 0);
    static const char req[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
    if (send(fd, req, sizeof req - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof req - 1)) {
        close(fd);
        return NULL;
    }
    char head[4096];
    size_t head_len = 0, total = 0;
    char buf[65536];
    ssize_t n;
    while ((n = recv(fd, buf, sizeof buf, 0)) > 0) {
        if (head_len < sizeof head - 1) {
            size_t copy = (size_t)n < sizeof head - 1 - head_len ? (size_t)n : sizeof head - 1 - head_len;
            memcpy(head + head_len, buf, copy);
            head_len += copy;
        }
        total += (size_t)n;
    }
    head[head_len] = '\0';
    close(fd);
    const char *end = strstr(head, "\r\n\r\n");
    const char *cl = strcasestr(head, "Content-Length: ");
    if (n == 0 && end && cl && strncmp(head, "HTTP/1.1 200", 12) == 0) {
        sc->content_length = strtoul(cl + 16, NULL, 10);
        sc->body_bytes = total - (size_t)(end + 4 - head);
        sc->ok = sc->body_bytes == sc->content_length;
    }
    sc->seconds = now_s() - t0;
    return NULL;
}

/* A scraper that stops half-way through its request and one that never
 * reads an answer larger than the socket buffers hold only their own
 * connections: eight scrapers at once still get the whole page at once. */
static void test_http_slow_scrapers_hold_only_their_own(void **state)
{
    (void)state;
    /* A page of about 8 MiB: more than the stuck scraper's socket buffers. */
    static char label[8300];
    char pad[8001];
    memset(pad, 'x', sizeof pad - 1);
    pad[sizeof pad - 1] = '\0';
    for (int i = 0; i < 1000; i++) {
        snprintf(label, sizeof label, "i=\"%d\",pad=\"%s\"", i, pad);
        assert_non_null(metrics_register(METRICS_GAUGE, "test_big_page", label, "Big."));
    }
    struct metrics_http *server = NULL;
    char err[256];
    assert_int_equal(metrics_http_start("127.0.0.1:0", &server, err, sizeof err), 0);
    int port = metrics_http_port(server);

    int half = connect_loopback(port, 0);
    assert_int_equal(send(half, "GET /metr", 9, 0), 9);
    int stuck = connect_loopback(port, 4096);
    static const char req[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
    assert_int_equal(send(stuck, req, sizeof req - 1, 0), (ssize_t)(sizeof req - 1));
    usleep(300 * 1000);

    enum { SCRAPERS = 8 };
    struct scrape scrapes[SCRAPERS];
    pthread_t threads[SCRAPERS];
    double t0 = now_s();
    for (int i = 0; i < SCRAPERS; i++) {
        scrapes[i] = (struct scrape){.port = port};
        assert_int_equal(pthread_create(&threads[i], NULL, scrape_page, &scrapes[i]), 0);
    }
    for (int i = 0; i < SCRAPERS; i++)
        pthread_join(threads[i], NULL);
    double elapsed = now_s() - t0;
    for (int i = 0; i < SCRAPERS; i++) {
        assert_true(scrapes[i].ok);
        assert_true(scrapes[i].body_bytes > 8u * 1000 * 1000);
    }
    /* The old one-at-a-time server never answered them (stuck on the
     * non-reader); this bound only keeps a busy machine from failing. */
    assert_true(elapsed < 8.0);
    metrics_http_stop(server);
    close(half);
    close(stuck);
    metrics_registry_clear();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_register_and_render),
        cmocka_unit_test(test_histogram),
        cmocka_unit_test(test_http_endpoint),
        cmocka_unit_test(test_http_slow_scrapers_hold_only_their_own),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
