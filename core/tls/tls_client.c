/* TLS on the broker's outgoing links: the outbound client's transport
 * (net/client_transport.h) over OpenSSL. TCP connects as for plaintext;
 * the handshake then runs from finish_connect, driven by the client's
 * loop readiness (wants_write picks the direction), bounded by the
 * client's connection setup timeout. A refused certificate fails the
 * attempt with OpenSSL's reason in the transport's error (and the log).
 *
 * Threads: a tls_client is shared by the connections of one or more
 * clients (their loop threads call tls_connect); its settings change
 * only under rebuild, and its context is swapped under mutex by
 * tls_client_reload (the main thread, on SIGHUP) and tls_client_update
 * (a dynamic config change, on the metadata thread). Each connection's SSL holds its own
 * reference to the context it started with, so a swap never frees one in
 * use. A tls_client_conn belongs to its client's loop thread. */
#include <arpa/inet.h>
#include <errno.h>
#include <openssl/err.h>
#include <pthread.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tls/tls_internal.h"
#include "util/logger.h"

/* One TLS record's plaintext: small requests are gathered into one. */
#define TLS_CLIENT_GATHER (16 * 1024)

struct tls_client {
    char link[32];
    bool verify_host;             /* ssl.endpoint.identification.algorithm=https */
    pthread_mutex_t rebuild;      /* serialises reload, update and check against settings */
    struct tls_settings settings; /* what ctx was built from; under rebuild */
    pthread_mutex_t mutex;        /* guards ctx */
    SSL_CTX *ctx;                 /* new connections' context; one reference */
};

struct tls_client_conn {
    SSL *ssl;
    bool tcp_done;
    bool want_write;
};

int tls_client_create(const char *link_name, const struct tls_settings *s, struct tls_client **out, char *err,
                      size_t errlen)
{
    *out = NULL;
    const char *algorithm = s->value[TLS_ENDPOINT_IDENTIFICATION] ? s->value[TLS_ENDPOINT_IDENTIFICATION] : "https";
    if (*algorithm && strcasecmp(algorithm, "https") != 0) {
        snprintf(err, errlen, "%s link: %s: '%s' is not supported (https, or empty for no host name check)", link_name,
                 s->source[TLS_ENDPOINT_IDENTIFICATION], algorithm);
        return -1;
    }
    struct tls_client *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(c->link, sizeof c->link, "%s", link_name);
    c->verify_host = *algorithm != '\0';
    if (tls_settings_copy(&c->settings, s) != 0) {
        snprintf(err, errlen, "out of memory");
        free(c);
        return -1;
    }
    char why[768];
    c->ctx = tls_client_context_build(&c->settings, why, sizeof why);
    if (!c->ctx) {
        snprintf(err, errlen, "%s link: %s", link_name, why);
        tls_settings_clear(&c->settings);
        free(c);
        return -1;
    }
    pthread_mutex_init(&c->mutex, NULL);
    pthread_mutex_init(&c->rebuild, NULL);
    *out = c;
    return 0;
}

/* Makes fresh the context of new connections; the caller holds rebuild.
 * Open connections hold their own references to the old one. */
static void swap_context(struct tls_client *c, SSL_CTX *fresh)
{
    pthread_mutex_lock(&c->mutex);
    SSL_CTX *old = c->ctx;
    c->ctx = fresh;
    pthread_mutex_unlock(&c->mutex);
    SSL_CTX_free(old);
}

int tls_client_reload(struct tls_client *c, char *err, size_t errlen)
{
    char why[768];
    pthread_mutex_lock(&c->rebuild);
    SSL_CTX *fresh = tls_client_context_build(&c->settings, why, sizeof why);
    if (fresh)
        swap_context(c, fresh);
    pthread_mutex_unlock(&c->rebuild);
    if (!fresh) {
        snprintf(err, errlen, "%s link: %s", c->link, why);
        return -1;
    }
    logger_info(TLS_LOG, "%s link: TLS certificates and keys reloaded", c->link);
    return 0;
}

int tls_client_check(struct tls_client *c, const struct tls_settings *s, char *err, size_t errlen)
{
    pthread_mutex_lock(&c->rebuild);
    bool unchanged = tls_settings_equal(&c->settings, s);
    pthread_mutex_unlock(&c->rebuild);
    if (unchanged)
        return 0;
    char why[768];
    SSL_CTX *probe = tls_client_context_build(s, why, sizeof why);
    if (!probe) {
        snprintf(err, errlen, "%s link: %s", c->link, why);
        return -1;
    }
    SSL_CTX_free(probe);
    return 0;
}

int tls_client_update(struct tls_client *c, const struct tls_settings *s, char *err, size_t errlen)
{
    struct tls_settings copy;
    if (tls_settings_copy(&copy, s) != 0) {
        snprintf(err, errlen, "%s link: out of memory", c->link);
        return -1;
    }
    pthread_mutex_lock(&c->rebuild);
    if (tls_settings_equal(&c->settings, &copy)) {
        pthread_mutex_unlock(&c->rebuild);
        tls_settings_clear(&copy);
        return 0;
    }
    char why[768];
    SSL_CTX *fresh = tls_client_context_build(&copy, why, sizeof why);
    if (fresh) {
        swap_context(c, fresh);
        struct tls_settings old = c->settings;
        c->settings = copy;
        copy = old;
    }
    pthread_mutex_unlock(&c->rebuild);
    tls_settings_clear(&copy);
    if (!fresh) {
        snprintf(err, errlen, "%s link: %s", c->link, why);
        return -1;
    }
    logger_info(TLS_LOG, "%s link: new TLS settings applied; new connections use them", c->link);
    return 1;
}

void tls_client_free(struct tls_client *c)
{
    if (!c)
        return;
    SSL_CTX_free(c->ctx);
    pthread_mutex_destroy(&c->mutex);
    pthread_mutex_destroy(&c->rebuild);
    tls_settings_clear(&c->settings);
    free(c);
}

static bool is_ip_literal(const char *host)
{
    unsigned char buf[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

/* The certificate must name the host: an IP SAN for an address literal,
 * a DNS SAN (or CN) otherwise, as Kafka's https check does. */
static int expect_host(SSL *ssl, const char *host)
{
    if (is_ip_literal(host))
        return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1 ? 0 : -1;
    SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    return SSL_set1_host(ssl, host) == 1 ? 0 : -1;
}

static void conn_free(struct client_transport *t)
{
    struct tls_client_conn *tc = t->state;
    if (tc) {
        SSL_free(tc->ssl);
        free(tc);
    }
    t->state = NULL;
}

static int tls_connect(struct client_transport *t, const struct sockaddr *addr, socklen_t addrlen)
{
    struct tls_client *c = t->ctx;
    int rc = client_plain_transport.connect(t, addr, addrlen);
    if (rc != 0)
        return rc;
    struct tls_client_conn *tc = calloc(1, sizeof *tc);
    SSL *ssl = NULL;
    if (tc) {
        /* SSL_new takes its own reference: the context outlives a swap. */
        pthread_mutex_lock(&c->mutex);
        ssl = SSL_new(c->ctx);
        pthread_mutex_unlock(&c->mutex);
    }
    bool ok = ssl && SSL_set_fd(ssl, t->fd) == 1;
    /* SNI carries names only, never address literals (RFC 6066). */
    if (ok && t->host && !is_ip_literal(t->host))
        ok = SSL_set_tlsext_host_name(ssl, t->host) == 1;
    if (ok && c->verify_host && t->host)
        ok = expect_host(ssl, t->host) == 0;
    if (!ok) {
        ERR_clear_error();
        SSL_free(ssl);
        free(tc);
        client_plain_transport.close(t);
        return -ENOMEM;
    }
    SSL_set_connect_state(ssl);
    tc->ssl = ssl;
    t->state = tc;
    return 0;
}

/* Fills t->error with why the handshake failed and logs it: the first
 * failure in a row and then every power of two, so a node that can never
 * connect says why without flooding the log. */
static int handshake_failed(struct client_transport *t, struct tls_client_conn *tc, int ret)
{
    const struct tls_client *c = t->ctx;
    int e = SSL_get_error(tc->ssl, ret);
    long verify = SSL_get_verify_result(tc->ssl);
    char why[512];
    if (verify != X509_V_OK) {
        ERR_clear_error();
        snprintf(why, sizeof why, "certificate verify failed: %s", X509_verify_cert_error_string(verify));
    } else if (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
        snprintf(why, sizeof why, "the server closed the connection (%s)",
                 errno ? strerror(errno) : "is it a TLS listener, and does it accept this certificate?");
    } else {
        tls_error_string(why, sizeof why);
    }
    snprintf(t->error, sizeof t->error, "TLS handshake with %s:%d failed: %.200s", t->host ? t->host : "?", t->port,
             why);
    unsigned n = ++t->failures;
    if ((n & (n - 1)) == 0)
        logger_warn(TLS_LOG, "%s link: %s (%u failed in a row)", c->link, t->error, n);
    return -EPROTO;
}

static int tls_finish_connect(struct client_transport *t)
{
    struct tls_client_conn *tc = t->state;
    if (!tc->tcp_done) {
        int rc = client_plain_transport.finish_connect(t);
        if (rc != 0)
            return rc;
        tc->tcp_done = true;
    }
    ERR_clear_error();
    errno = 0;
    int ret = SSL_do_handshake(tc->ssl);
    if (ret == 1) {
        tc->want_write = false;
        return 0;
    }
    switch (SSL_get_error(tc->ssl, ret)) {
    case SSL_ERROR_WANT_READ:
        tc->want_write = false;
        return -EAGAIN;
    case SSL_ERROR_WANT_WRITE:
        tc->want_write = true;
        return -EAGAIN;
    default:
        return handshake_failed(t, tc, ret);
    }
}

static bool tls_wants_write(struct client_transport *t)
{
    const struct tls_client_conn *tc = t->state;
    return !tc || !tc->tcp_done || tc->want_write;
}

/* After the handshake: an error from SSL_read/SSL_write as an errno. */
static ssize_t io_result(struct client_transport *t, int ret, const char *what)
{
    struct tls_client_conn *tc = t->state;
    int e = SSL_get_error(tc->ssl, ret);
    switch (e) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
        return -EAGAIN;
    case SSL_ERROR_ZERO_RETURN:
        return 0;
    case SSL_ERROR_SYSCALL:
        if (ERR_peek_error() == 0)
            return errno ? -errno : 0; /* EOF without close_notify: a close */
        break;
    default:
        break;
    }
    /* E.g. the server's alert refusing our certificate, which TLS 1.3
     * delivers after the client considers the handshake done. */
    char why[512];
    tls_error_string(why, sizeof why);
    const struct tls_client *c = t->ctx;
    snprintf(t->error, sizeof t->error, "TLS %s with %s:%d failed: %.180s%s", what, t->host ? t->host : "?", t->port,
             why, strstr(why, "alert") ? " (the server refused this certificate?)" : "");
    logger_warn(TLS_LOG, "%s link: %s", c->link, t->error);
    return -ECONNRESET;
}

static ssize_t tls_read(struct client_transport *t, void *buf, size_t len)
{
    struct tls_client_conn *tc = t->state;
    int want = len > INT32_MAX ? INT32_MAX : (int)len;
    ERR_clear_error();
    errno = 0;
    int n = SSL_read(tc->ssl, buf, want);
    return n > 0 ? n : io_result(t, n, "read");
}

static ssize_t tls_writev(struct client_transport *t, const struct iovec *iov, int iovcnt)
{
    struct tls_client_conn *tc = t->state;
    const void *data = iov[0].iov_base;
    size_t len = iov[0].iov_len;
    char gather[TLS_CLIENT_GATHER];
    /* A retried write starts at the same byte and is at least as long as
     * the try before, as SSL_write requires: the connection re-offers its
     * unwritten bytes in order, and gathering only adds to them. */
    if (iovcnt > 1 && len < sizeof gather) {
        size_t used = 0;
        for (int i = 0; i < iovcnt && used < sizeof gather; i++) {
            size_t step = iov[i].iov_len < sizeof gather - used ? iov[i].iov_len : sizeof gather - used;
            memcpy(gather + used, iov[i].iov_base, step);
            used += step;
        }
        data = gather;
        len = used;
    }
    int want = len > INT32_MAX ? INT32_MAX : (int)len;
    ERR_clear_error();
    errno = 0;
    int n = SSL_write(tc->ssl, data, want);
    return n > 0 ? n : io_result(t, n, "write");
}

static size_t tls_pending(struct client_transport *t)
{
    const struct tls_client_conn *tc = t->state;
    return tc ? (size_t)SSL_pending(tc->ssl) : 0;
}

static void tls_close(struct client_transport *t)
{
    conn_free(t);
    client_plain_transport.close(t);
}

const struct client_transport_ops tls_client_transport_ops = {
    .name = "ssl",
    .connect = tls_connect,
    .finish_connect = tls_finish_connect,
    .read = tls_read,
    .writev = tls_writev,
    .close = tls_close,
    .wants_write = tls_wants_write,
    .pending = tls_pending,
};
