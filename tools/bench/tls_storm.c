/* cairn-tls-storm: opens new TLS connections to a broker as fast as it can
 * for a while, from a few threads at once. Each connection is a full
 * handshake (no session resumption), one ApiVersions v0 request and its
 * answer, then close. Prints one JSON object: connections completed and
 * failed, completed per second, and the time of one connection (TCP
 * connect to ApiVersions answer) at p50/p99/max. See docs/benchmarks.md,
 * "TLS connection storm". */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench_histogram.h"

#define STORM_MAX_THREADS 64
#define STORM_IO_TIMEOUT_S 10

struct storm_options {
    char host[64];
    int port;
    const char *ca_path;
    double seconds;
    int threads;
};

struct storm_worker {
    pthread_t thread;
    const struct storm_options *opts;
    SSL_CTX *ctx;
    uint64_t deadline_us;
    uint64_t completed;
    uint64_t failed;
    char last_error[200];
    const char *cipher; /* static strings from OpenSSL */
    const char *protocol;
    struct bench_histogram hist;
};

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static int tcp_connect(const struct storm_options *opts)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct timeval tv = {.tv_sec = STORM_IO_TIMEOUT_S};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)opts->port)};
    if (inet_pton(AF_INET, opts->host, &addr.sin_addr) != 1 || connect(fd, (struct sockaddr *)&addr, sizeof addr)) {
        close(fd);
        return -1;
    }
    return fd;
}

static int ssl_read_full(SSL *ssl, uint8_t *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        int n = SSL_read(ssl, buf + got, (int)(len - got));
        if (n <= 0)
            return -1;
        got += (size_t)n;
    }
    return 0;
}

/* One connection: handshake, ApiVersions v0, answer checked, close.
 * Returns 0, or -1 with the reason in err. */
static int storm_one(struct storm_worker *w, int32_t correlation_id, char *err, size_t errlen)
{
    int fd = tcp_connect(w->opts);
    if (fd < 0) {
        snprintf(err, errlen, "connect: %s", strerror(errno));
        return -1;
    }
    int rc = -1;
    SSL *ssl = SSL_new(w->ctx);
    if (!ssl || !SSL_set_fd(ssl, fd)) {
        snprintf(err, errlen, "SSL_new failed");
        goto out;
    }
    /* The broker certificate must name the address dialled. */
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), w->opts->host);
    if (SSL_connect(ssl) != 1) {
        snprintf(err, errlen, "handshake: %s", ERR_reason_error_string(ERR_get_error()));
        goto out;
    }
    w->cipher = SSL_get_cipher_name(ssl);
    w->protocol = SSL_get_version(ssl);
    /* size, api_key 18 (ApiVersions), version 0, correlation id, client id */
    static const char client_id[] = "cairn-tls-storm";
    uint8_t req[4 + 2 + 2 + 4 + 2 + sizeof client_id - 1];
    uint32_t size = htonl((uint32_t)(sizeof req - 4));
    uint16_t api_key = htons(18), version = 0, id_len = htons((uint16_t)(sizeof client_id - 1));
    uint32_t corr = htonl((uint32_t)correlation_id);
    memcpy(req, &size, 4);
    memcpy(req + 4, &api_key, 2);
    memcpy(req + 6, &version, 2);
    memcpy(req + 8, &corr, 4);
    memcpy(req + 12, &id_len, 2);
    memcpy(req + 14, client_id, sizeof client_id - 1);
    if (SSL_write(ssl, req, (int)sizeof req) != (int)sizeof req) {
        snprintf(err, errlen, "write of ApiVersions failed");
        goto out;
    }
    uint8_t head[10];
    if (ssl_read_full(ssl, head, sizeof head)) {
        snprintf(err, errlen, "no ApiVersions answer");
        goto out;
    }
    uint32_t answer_size, answer_corr;
    uint16_t error_code;
    memcpy(&answer_size, head, 4);
    memcpy(&answer_corr, head + 4, 4);
    memcpy(&error_code, head + 8, 2);
    answer_size = ntohl(answer_size);
    if ((int32_t)ntohl(answer_corr) != correlation_id || ntohs(error_code) != 0 || answer_size < 6 ||
        answer_size > 65536) {
        snprintf(err, errlen, "bad ApiVersions answer (correlation id %d, error %d, size %u)", (int)ntohl(answer_corr),
                 (int)(int16_t)ntohs(error_code), answer_size);
        goto out;
    }
    uint8_t rest[65536];
    if (ssl_read_full(ssl, rest, answer_size - 6)) {
        snprintf(err, errlen, "ApiVersions answer cut short");
        goto out;
    }
    rc = 0;
out:
    if (ssl)
        SSL_free(ssl); /* closed without close_notify, as a client that exits would */
    close(fd);
    ERR_clear_error();
    return rc;
}

static void *storm_worker_main(void *arg)
{
    struct storm_worker *w = arg;
    int32_t correlation_id = 1;
    char err[200];
    while (now_us() < w->deadline_us) {
        uint64_t start = now_us();
        if (storm_one(w, correlation_id++, err, sizeof err) == 0) {
            bench_histogram_record(&w->hist, now_us() - start);
            w->completed++;
        } else {
            w->failed++;
            snprintf(w->last_error, sizeof w->last_error, "%s", err);
        }
    }
    return NULL;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: cairn-tls-storm --bootstrap 127.0.0.1:PORT --ca CA.pem [--seconds 10] [--threads 4]\n");
}

static int parse_args(int argc, char **argv, struct storm_options *opts)
{
    *opts = (struct storm_options){.seconds = 10, .threads = 4};
    const char *bootstrap = NULL;
    for (int i = 1; i < argc; i++) {
        const char *name = argv[i];
        if (!strcmp(name, "-h") || !strcmp(name, "--help")) {
            usage(stdout);
            exit(0);
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "cairn-tls-storm: %s needs a value\n", name);
            return -1;
        }
        const char *value = argv[++i];
        char *end = NULL;
        if (!strcmp(name, "--bootstrap")) {
            bootstrap = value;
        } else if (!strcmp(name, "--ca")) {
            opts->ca_path = value;
        } else if (!strcmp(name, "--seconds")) {
            opts->seconds = strtod(value, &end);
            if (*end || !(opts->seconds > 0 && opts->seconds <= 3600)) {
                fprintf(stderr, "cairn-tls-storm: --seconds wants (0, 3600], got '%s'\n", value);
                return -1;
            }
        } else if (!strcmp(name, "--threads")) {
            long n = strtol(value, &end, 10);
            if (*end || n < 1 || n > STORM_MAX_THREADS) {
                fprintf(stderr, "cairn-tls-storm: --threads wants 1..%d, got '%s'\n", STORM_MAX_THREADS, value);
                return -1;
            }
            opts->threads = (int)n;
        } else {
            fprintf(stderr, "cairn-tls-storm: unknown option %s\n", name);
            return -1;
        }
    }
    const char *colon = bootstrap ? strrchr(bootstrap, ':') : NULL;
    if (!colon || colon == bootstrap || (size_t)(colon - bootstrap) >= sizeof opts->host || !opts->ca_path) {
        usage(stderr);
        return -1;
    }
    memcpy(opts->host, bootstrap, (size_t)(colon - bootstrap));
    opts->host[colon - bootstrap] = '\0';
    char *end = NULL;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 1 || port > 65535) {
        fprintf(stderr, "cairn-tls-storm: bad port in --bootstrap %s\n", bootstrap);
        return -1;
    }
    opts->port = (int)port;
    return 0;
}

int main(int argc, char **argv)
{
    struct storm_options opts;
    if (parse_args(argc, argv, &opts))
        return 2;
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx || SSL_CTX_load_verify_locations(ctx, opts.ca_path, NULL) != 1) {
        fprintf(stderr, "cairn-tls-storm: cannot load CA %s\n", opts.ca_path);
        return 1;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    /* Every connection a full handshake, as a fleet of new clients makes. */
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);

    static struct storm_worker workers[STORM_MAX_THREADS];
    uint64_t started = now_us();
    uint64_t deadline = started + (uint64_t)(opts.seconds * 1e6);
    int running = 0;
    for (int i = 0; i < opts.threads; i++) {
        workers[i] = (struct storm_worker){.opts = &opts, .ctx = ctx, .deadline_us = deadline};
        bench_histogram_init(&workers[i].hist);
        if (pthread_create(&workers[i].thread, NULL, storm_worker_main, &workers[i]) != 0) {
            fprintf(stderr, "cairn-tls-storm: cannot start thread %d\n", i);
            break;
        }
        running++;
    }
    static struct bench_histogram all;
    bench_histogram_init(&all);
    uint64_t completed = 0, failed = 0;
    const char *last_error = "", *cipher = "", *protocol = "";
    for (int i = 0; i < running; i++) {
        pthread_join(workers[i].thread, NULL);
        completed += workers[i].completed;
        failed += workers[i].failed;
        if (workers[i].failed)
            last_error = workers[i].last_error;
        if (workers[i].cipher) {
            cipher = workers[i].cipher;
            protocol = workers[i].protocol;
        }
        for (size_t b = 0; b < BENCH_HISTOGRAM_BUCKETS; b++)
            all.counts[b] += workers[i].hist.counts[b];
        all.total += workers[i].hist.total;
        if (workers[i].hist.max_us > all.max_us)
            all.max_us = workers[i].hist.max_us;
    }
    double elapsed_s = (double)(now_us() - started) / 1e6;
    /* last_error comes from our own snprintf of OpenSSL reason strings:
     * printable, but quotes are dropped to keep the JSON valid. */
    char error_text[200];
    size_t j = 0;
    for (size_t i = 0; last_error[i] && j + 1 < sizeof error_text; i++)
        if (last_error[i] != '"' && last_error[i] != '\\')
            error_text[j++] = last_error[i];
    error_text[j] = '\0';
    printf("{\"threads\": %d, \"seconds\": %.3f, \"connections\": %llu, \"failed\": %llu, "
           "\"connections_per_sec\": %.1f, \"connection_ms\": {\"p50\": %.3f, \"p99\": %.3f, \"max\": %.3f}, "
           "\"protocol\": \"%s\", \"cipher\": \"%s\", \"last_error\": \"%s\"}\n",
           running, elapsed_s, (unsigned long long)completed, (unsigned long long)failed,
           elapsed_s > 0 ? (double)completed / elapsed_s : 0.0, bench_histogram_quantile(&all, 0.5) / 1000.0,
           bench_histogram_quantile(&all, 0.99) / 1000.0, all.max_us / 1000.0, protocol, cipher, error_text);
    SSL_CTX_free(ctx);
    return running == opts.threads ? 0 : 1;
}
