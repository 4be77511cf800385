/* Batched TLS writes for the connections of a listener (without kTLS).
 * OpenSSL writes each record (16 KiB at most) to its write BIO as soon as
 * it is sealed, so a fetch of 1 MiB costs 64 write() calls, each pushing a
 * 16 KiB segment through the TCP stack. A filter BIO on top of the socket
 * BIO collects the records of several SSL_write calls in one buffer while a
 * batch is open, and the batch goes to the socket in one send(). Outside a
 * batch (handshake, alerts, close_notify, kTLS) it passes every call to the
 * socket BIO unchanged.
 *
 * Buffers: each loop thread owns a plaintext staging buffer (file bytes
 * read for a batch) and one spare ciphertext buffer. A connection takes the
 * spare for a batch and gives it back once the socket took all of it; a
 * batch the socket did not take whole stays with the connection (held)
 * until it is written, so only connections under backpressure keep one.
 *
 * Threads: a tls_batch belongs to its connection's loop thread. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "tls/tls_internal.h"

struct tls_thread_buffers {
    unsigned char plain[TLS_BATCH_PLAIN];
    unsigned char *spare_cipher; /* NULL while a connection holds it */
};

static pthread_key_t buffers_key;
static pthread_once_t buffers_once = PTHREAD_ONCE_INIT;
static bool buffers_key_ok;
static BIO_METHOD *batch_method;

static void buffers_free(void *p)
{
    struct tls_thread_buffers *tb = p;
    free(tb->spare_cipher);
    free(tb);
}

static int batch_bio_write(BIO *bio, const char *data, int len);
static long batch_bio_ctrl(BIO *bio, int cmd, long num, void *ptr);

static int batch_bio_create(BIO *bio)
{
    BIO_set_init(bio, 1);
    return 1;
}

static void buffers_init(void)
{
    buffers_key_ok = pthread_key_create(&buffers_key, buffers_free) == 0;
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_FILTER, "cairn TLS record batch");
    if (m && BIO_meth_set_write(m, batch_bio_write) == 1 && BIO_meth_set_ctrl(m, batch_bio_ctrl) == 1 &&
        BIO_meth_set_create(m, batch_bio_create) == 1) {
        batch_method = m;
        return;
    }
    BIO_meth_free(m);
}

static struct tls_thread_buffers *thread_buffers(void)
{
    pthread_once(&buffers_once, buffers_init);
    if (!buffers_key_ok)
        return NULL;
    struct tls_thread_buffers *tb = pthread_getspecific(buffers_key);
    if (tb)
        return tb;
    tb = calloc(1, sizeof *tb);
    if (!tb)
        return NULL;
    if (pthread_setspecific(buffers_key, tb) != 0) {
        free(tb);
        return NULL;
    }
    return tb;
}

unsigned char *tls_batch_plain_buffer(void)
{
    struct tls_thread_buffers *tb = thread_buffers();
    return tb ? tb->plain : NULL;
}

static void give_back(unsigned char *buf)
{
    struct tls_thread_buffers *tb = thread_buffers();
    if (tb && !tb->spare_cipher)
        tb->spare_cipher = buf;
    else
        free(buf);
}

/* While a batch is open, records go into its buffer; a record that does not
 * fit asks OpenSSL to retry (tls_batch_send keeps room, so that is a
 * safety net, not a path). Otherwise, straight to the socket BIO. */
static int batch_bio_write(BIO *bio, const char *data, int len)
{
    struct tls_batch *b = BIO_get_data(bio);
    BIO *next = BIO_next(bio);
    BIO_clear_retry_flags(bio);
    if (b && b->buf) {
        if (len < 0 || (size_t)len > b->cap - b->len) {
            BIO_set_retry_write(bio);
            return -1;
        }
        memcpy(b->buf + b->len, data, (size_t)len);
        b->len += (size_t)len;
        return len;
    }
    if (!next)
        return -1;
    int n = BIO_write(next, data, len);
    BIO_copy_next_retry(bio);
    return n;
}

/* Every control (flush, fd, kTLS) belongs to the socket BIO below. */
static long batch_bio_ctrl(BIO *bio, int cmd, long num, void *ptr)
{
    BIO *next = BIO_next(bio);
    return next ? BIO_ctrl(next, cmd, num, ptr) : 0;
}

int tls_batch_attach(SSL *ssl, struct tls_batch *b)
{
    pthread_once(&buffers_once, buffers_init);
    BIO *sock = SSL_get_wbio(ssl);
    if (!batch_method || !sock)
        return -1;
    BIO *filter = BIO_new(batch_method);
    if (!filter || BIO_up_ref(sock) != 1) {
        BIO_free(filter);
        return -1;
    }
    BIO_set_data(filter, b);
    BIO_push(filter, sock);
    SSL_set0_wbio(ssl, filter); /* drops the SSL's own reference to sock as its wbio */
    return 0;
}

int tls_batch_begin(struct tls_batch *b)
{
    struct tls_thread_buffers *tb = thread_buffers();
    if (!tb) {
        errno = ENOMEM;
        return -1;
    }
    unsigned char *buf = tb->spare_cipher;
    tb->spare_cipher = NULL;
    if (!buf)
        buf = malloc(TLS_BATCH_CIPHER_CAP);
    if (!buf) {
        errno = ENOMEM;
        return -1;
    }
    b->buf = buf;
    b->len = 0;
    b->cap = TLS_BATCH_CIPHER_CAP;
    return 0;
}

bool tls_batch_has_room(const struct tls_batch *b)
{
    /* A record being sealed, plus one OpenSSL may still hold from a write
     * the socket refused before the batch opened. */
    return b->cap - b->len >= 2 * TLS_RECORD_MAX;
}

void tls_batch_close(struct tls_batch *b, size_t plain)
{
    b->held = b->buf;
    b->held_len = b->len;
    b->held_off = 0;
    b->held_plain = plain;
    b->buf = NULL;
    b->len = 0;
    b->cap = 0;
}

int tls_batch_flush(struct tls_batch *b, int fd)
{
    while (b->held_off < b->held_len) {
        ssize_t n = send(fd, b->held + b->held_off, b->held_len - b->held_off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
        }
        b->held_off += (size_t)n;
    }
    if (b->held)
        give_back(b->held);
    b->held = NULL;
    b->held_len = b->held_off = 0;
    return 1;
}

void tls_batch_free(struct tls_batch *b)
{
    free(b->held);
    free(b->buf);
    memset(b, 0, sizeof *b);
}
