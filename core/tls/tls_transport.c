/* The TLS transport: OpenSSL on the connection's nonblocking socket. The
 * handshake runs inside recv, driven by the loop's readiness (WANT_WRITE
 * asks the connection to poll for writability), bounded by a deadline the
 * loop enforces. File regions go out with SSL_sendfile when the kernel took
 * the keys (kTLS). Without kTLS, every write is sealed in batches of up to
 * 16 records (tls_batch.c) and sent with one send(): file regions by a pread
 * of 256 KiB into the thread's staging buffer, then SSL_write per record.
 *
 * Threads: a tls_conn belongs to its connection's loop thread. */
#include <errno.h>
#include <inttypes.h>
#include <openssl/err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tls/tls_internal.h"
#include "util/clock.h"
#include "util/logger.h"

struct tls_conn {
    SSL *ssl;
    const struct tls_listener *listener; /* outlives the network server */
    int64_t deadline_ms;                 /* handshake deadline; 0 once done */
    bool handshake_done;
    bool failed; /* a fatal error: no close_notify */
    bool want_write;
    bool ktls_send;
    int principal_state; /* 0 none, 1 ready to report, 2 reported */
    char principal_type[64];
    char principal_name[512];
    char peer[64];
    struct tls_batch batch; /* the write BIO points here */
};

/* Turns an SSL_get_error result into the syscall convention. Logs a
 * protocol failure once, with OpenSSL's reason. */
static ssize_t tls_result(struct tls_conn *tc, int ret, const char *what)
{
    int e = SSL_get_error(tc->ssl, ret);
    switch (e) {
    case SSL_ERROR_WANT_READ:
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_WANT_WRITE:
        tc->want_write = true;
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_ZERO_RETURN:
        return 0; /* close_notify */
    case SSL_ERROR_SYSCALL:
        tc->failed = true;
        if (ERR_peek_error() == 0 && (errno == 0 || errno == ECONNRESET || errno == EPIPE)) {
            ERR_clear_error();
            if (!tc->handshake_done)
                logger_info(TLS_LOG, "TLS handshake with %s on %s: the peer went away", tc->peer, tc->listener->name);
            return 0; /* EOF without close_notify: treated as a close */
        }
        break;
    default:
        tc->failed = true;
        break;
    }
    char why[512];
    long verify = SSL_get_verify_result(tc->ssl);
    tls_error_string(why, sizeof why);
    if (verify != X509_V_OK)
        logger_info(TLS_LOG, "%s with %s on %s failed: client certificate refused: %s (%s)", what, tc->peer,
                    tc->listener->name, X509_verify_cert_error_string(verify), why);
    else
        logger_info(TLS_LOG, "%s with %s on %s failed: %s", what, tc->peer, tc->listener->name, why);
    if (!tc->handshake_done && tc->listener->on_refusal) {
        char reason[768];
        if (verify != X509_V_OK)
            snprintf(reason, sizeof reason, "TLS handshake failed: client certificate refused: %s (%s)",
                     X509_verify_cert_error_string(verify), why);
        else
            snprintf(reason, sizeof reason, "TLS handshake failed: %s", why);
        tc->listener->on_refusal(tc->listener->refusal_ctx, tc->listener->name, tc->peer, reason);
    }
    errno = ECONNRESET;
    return -1;
}

static int tls_finish_handshake(struct tls_conn *tc)
{
    tc->handshake_done = true;
    tc->deadline_ms = 0;
    tc->ktls_send = BIO_get_ktls_send(SSL_get_wbio(tc->ssl)) == 1;
    X509 *cert = SSL_get0_peer_certificate(tc->ssl);
    logger_debug(TLS_LOG, "TLS with %s on %s: %s, %s, client certificate %s, kTLS send %s", tc->peer,
                 tc->listener->name, SSL_get_version(tc->ssl), SSL_get_cipher_name(tc->ssl), cert ? "verified" : "none",
                 tc->ktls_send ? "on" : "off");
    if (!cert || SSL_get_verify_result(tc->ssl) != X509_V_OK)
        return 0;
    char err[256] = "";
    if (tls_peer_principal(tc->listener, tc->peer, tc->ssl, tc->principal_type, sizeof tc->principal_type,
                           tc->principal_name, sizeof tc->principal_name, err, sizeof err) != 0) {
        logger_info(TLS_LOG, "TLS client %s on %s refused: %s", tc->peer, tc->listener->name, err);
        tc->failed = true;
        return -1;
    }
    tc->principal_state = 1;
    return 0;
}

static ssize_t tls_recv(struct net_transport *t, void *buf, size_t len)
{
    struct tls_conn *tc = t->state;
    tc->want_write = false;
    ERR_clear_error();
    if (!tc->handshake_done) {
        int rc = SSL_do_handshake(tc->ssl);
        if (rc != 1)
            return tls_result(tc, rc, "TLS handshake");
        if (tls_finish_handshake(tc) != 0) {
            errno = ECONNRESET;
            return -1;
        }
    }
    int n = SSL_read(tc->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);
    return n > 0 ? n : tls_result(tc, n, "TLS read");
}

static ssize_t tls_write(struct tls_conn *tc, const void *buf, size_t len)
{
    if (!tc->handshake_done) {
        errno = EAGAIN; /* nothing is written before the handshake finished */
        return -1;
    }
    ERR_clear_error();
    int n = SSL_write(tc->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);
    return n > 0 ? n : tls_result(tc, n, "TLS write");
}

/* Writes the held batch. Once all of it is out, the plaintext count it
 * stands for (0 for a batch that took none); -1 with EAGAIN while the
 * socket is full. The caller asks for the same bytes again after EAGAIN
 * (as OpenSSL requires of SSL_write), so asked covers that count. */
static ssize_t tls_send_held(struct tls_conn *tc, int fd, size_t asked)
{
    int rc = tls_batch_flush(&tc->batch, fd);
    if (rc < 0) {
        tc->failed = true;
        return -1;
    }
    if (rc == 0) {
        errno = EAGAIN;
        return -1;
    }
    size_t plain = tc->batch.held_plain;
    tc->batch.held_plain = 0;
    if (plain > asked) {
        logger_warn(TLS_LOG, "TLS with %s on %s: a write retry asked for %zu bytes, %zu were already sent", tc->peer,
                    tc->listener->name, asked, plain);
        tc->failed = true;
        errno = EPROTO;
        return -1;
    }
    return (ssize_t)plain;
}

/* Seals iov's bytes (up to TLS_BATCH_PLAIN) into one batch of records and
 * sends it with one send(). The plaintext count taken, all of it on the
 * socket; -1 with EAGAIN when the socket did not take the whole batch (it
 * is held for the caller's retry). */
static ssize_t tls_send_batch(struct tls_conn *tc, int fd, const struct iovec *iov, int iovcnt)
{
    if (tls_batch_begin(&tc->batch) != 0)
        return -1;
    size_t taken = 0;
    int ret = 1;
    ERR_clear_error();
    for (int i = 0; i < iovcnt; i++) {
        const unsigned char *base = iov[i].iov_base;
        size_t off = 0;
        while (off < iov[i].iov_len && taken < TLS_BATCH_PLAIN && tls_batch_has_room(&tc->batch)) {
            size_t piece = iov[i].iov_len - off;
            if (piece > TLS_RECORD_PLAIN)
                piece = TLS_RECORD_PLAIN;
            ret = SSL_write(tc->ssl, base + off, (int)piece);
            if (ret <= 0)
                break;
            off += (size_t)ret;
            taken += (size_t)ret;
        }
        if (off < iov[i].iov_len)
            break;
    }
    bool sealed_any = tc->batch.len > 0;
    tls_batch_close(&tc->batch, taken);
    if (ret <= 0) {
        int e = SSL_get_error(tc->ssl, ret);
        bool retry = e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ;
        if (!retry || !sealed_any) {
            tls_batch_free(&tc->batch);
            return tls_result(tc, ret, "TLS write");
        }
    }
    ssize_t n = tls_send_held(tc, fd, taken);
    if (n == 0) {
        errno = EAGAIN;
        return -1;
    }
    return n;
}

static ssize_t tls_send(struct net_transport *t, const struct iovec *iov, int iovcnt, int flags)
{
    (void)flags;
    struct tls_conn *tc = t->state;
    if (!tc->ktls_send && tc->handshake_done) {
        size_t asked = 0;
        for (int i = 0; i < iovcnt; i++)
            asked += iov[i].iov_len;
        if (tc->batch.held) {
            ssize_t n = tls_send_held(tc, t->fd, asked);
            if (n != 0)
                return n;
        }
        return asked > 0 ? tls_send_batch(tc, t->fd, iov, iovcnt) : 0;
    }
    ssize_t total = 0;
    for (int i = 0; i < iovcnt; i++) {
        if (iov[i].iov_len == 0)
            continue;
        ssize_t n = tls_write(tc, iov[i].iov_base, iov[i].iov_len);
        if (n < 0)
            return total > 0 && errno == EAGAIN ? total : -1;
        total += n;
        if ((size_t)n < iov[i].iov_len)
            break;
    }
    return total;
}

static ssize_t tls_send_file(struct net_transport *t, int file_fd, int64_t pos, size_t len)
{
    struct tls_conn *tc = t->state;
    if (tc->ktls_send) {
        ERR_clear_error();
        ossl_ssize_t n = SSL_sendfile(tc->ssl, file_fd, (off_t)pos, len, 0);
        return n >= 0 ? (ssize_t)n : tls_result(tc, (int)n, "TLS sendfile");
    }
    if (!tc->handshake_done) {
        errno = EAGAIN;
        return -1;
    }
    if (tc->batch.held) {
        ssize_t n = tls_send_held(tc, t->fd, len);
        if (n != 0)
            return n;
    }
    /* A retry after WANT_WRITE asks for the same position again, so the
     * bytes handed to SSL_write are the same ones, as OpenSSL requires. */
    unsigned char *plain = tls_batch_plain_buffer();
    if (!plain) {
        errno = ENOMEM;
        return -1;
    }
    size_t want = len < TLS_BATCH_PLAIN ? len : TLS_BATCH_PLAIN;
    ssize_t got;
    do
        got = pread(file_fd, plain, want, (off_t)pos);
    while (got < 0 && errno == EINTR);
    if (got <= 0)
        return got;
    struct iovec iov = {plain, (size_t)got};
    return tls_send_batch(tc, t->fd, &iov, 1);
}

static size_t tls_pending(struct net_transport *t)
{
    struct tls_conn *tc = t->state;
    int n = SSL_pending(tc->ssl);
    if (n > 0)
        return (size_t)n;
    return SSL_has_pending(tc->ssl) ? 1 : 0;
}

/* A client that did not finish its handshake in time (a stalled or
 * trickled ClientHello) was refused: the loop closes it past the deadline.
 * One that failed or went away was already dealt with in tls_result. */
static void tls_report_timeout(const struct tls_conn *tc)
{
    if (tc->handshake_done || tc->failed || tc->deadline_ms <= 0 || clock_mono_ms() < tc->deadline_ms ||
        !tc->listener->on_refusal)
        return;
    int64_t timeout = tc->listener->handshake_timeout_ms;
    char reason[160];
    snprintf(reason, sizeof reason,
             "TLS handshake timed out: not finished within ssl.handshake.timeout.ms (%" PRId64 " ms)",
             timeout > 0 ? timeout : (int64_t)TLS_DEFAULT_HANDSHAKE_TIMEOUT_MS);
    tc->listener->on_refusal(tc->listener->refusal_ctx, tc->listener->name, tc->peer, reason);
}

static void tls_close(struct net_transport *t)
{
    struct tls_conn *tc = t->state;
    if (!tc)
        return;
    tls_report_timeout(tc);
    if (tc->handshake_done && !tc->failed && !tc->batch.held) {
        /* Best effort and nonblocking: the socket closes right after. A
         * close_notify behind a batch the socket never took would reach
         * the peer out of sequence. */
        ERR_clear_error();
        SSL_shutdown(tc->ssl);
    }
    ERR_clear_error();
    SSL_free(tc->ssl);
    tls_batch_free(&tc->batch);
    free(tc);
    t->state = NULL;
}

static bool tls_wants_write(struct net_transport *t)
{
    struct tls_conn *tc = t->state;
    return tc->want_write;
}

static int64_t tls_deadline(struct net_transport *t)
{
    struct tls_conn *tc = t->state;
    return tc->deadline_ms;
}

static int tls_peer_principal_op(struct net_transport *t, char *type, size_t type_len, char *name, size_t name_len)
{
    struct tls_conn *tc = t->state;
    if (tc->principal_state != 1)
        return 0;
    tc->principal_state = 2;
    snprintf(type, type_len, "%s", tc->principal_type);
    snprintf(name, name_len, "%s", tc->principal_name);
    return 1;
}

const struct net_transport_ops tls_transport_ops = {
    .name = "TLS",
    .recv = tls_recv,
    .send = tls_send,
    .send_file = tls_send_file,
    .pending = tls_pending,
    .close = tls_close,
    .wants_write = tls_wants_write,
    .deadline_ms = tls_deadline,
    .peer_principal = tls_peer_principal_op,
};

int tls_listener_transport_init(void *ctx, struct net_transport *t)
{
    struct tls_listener *l = ctx;
    struct tls_conn *tc = calloc(1, sizeof *tc);
    if (!tc)
        return -1;
    pthread_mutex_lock(&l->mutex);
    tc->ssl = SSL_new(l->ctx); /* holds its own reference to the context */
    pthread_mutex_unlock(&l->mutex);
    if (!tc->ssl || SSL_set_fd(tc->ssl, t->fd) != 1 || tls_batch_attach(tc->ssl, &tc->batch) != 0) {
        char why[256];
        tls_error_string(why, sizeof why);
        logger_warn(TLS_LOG, "listener %s: cannot start TLS on a connection: %s", l->name, why);
        SSL_free(tc->ssl);
        free(tc);
        return -1;
    }
    SSL_set_accept_state(tc->ssl);
    tc->listener = l;
    int64_t timeout = l->handshake_timeout_ms;
    tc->deadline_ms = clock_mono_ms() + (timeout > 0 ? timeout : TLS_DEFAULT_HANDSHAKE_TIMEOUT_MS);
    net_format_peer(t->fd, tc->peer, sizeof tc->peer);
    t->ops = &tls_transport_ops;
    t->state = tc;
    return 0;
}
