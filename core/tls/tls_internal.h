/* Private parts of the TLS module shared by its files. */
#ifndef CAIRN_TLS_INTERNAL_H
#define CAIRN_TLS_INTERNAL_H

#include <openssl/ssl.h>
#include <pthread.h>
#include <stdbool.h>

#include "tls/tls.h"

#define TLS_LOG "tls"
#define TLS_DEFAULT_HANDSHAKE_TIMEOUT_MS 10000

/* Created and freed on the main thread; ctx is swapped by a reload or an
 * update under mutex while loop threads take references to it. settings
 * belongs to whoever holds rebuild (a SIGHUP reload on the main thread, a
 * dynamic config change on the metadata thread). */
struct tls_listener {
    char name[32];
    pthread_mutex_t rebuild;      /* serialises reload, update and check against settings */
    struct tls_settings settings; /* what ctx was built from; under rebuild */
    int64_t handshake_timeout_ms; /* fixed at create: read by loop threads */
    tls_principal_fn map_principal;
    void *map_ctx;
    tls_refusal_fn on_refusal; /* set before the server starts; read by loop threads */
    void *refusal_ctx;
    pthread_mutex_t mutex;
    SSL_CTX *ctx;
};

/* Whether a and b hold the same values (sources aside). */
bool tls_settings_equal(const struct tls_settings *a, const struct tls_settings *b);

/* Builds a server context from s; -1 with err naming the key and OpenSSL's
 * reason. */
SSL_CTX *tls_context_build(const struct tls_settings *s, char *err, size_t errlen);

/* Builds a client context for outgoing links from s: truststore required,
 * keystore when set. NULL with err naming the key. */
SSL_CTX *tls_client_context_build(const struct tls_settings *s, char *err, size_t errlen);

/* OpenSSL's reasons for the last failure on this thread, joined, and the
 * queue emptied. */
void tls_error_string(char *out, size_t outlen);

/* The principal of a verified client certificate: the listener's mapping,
 * or User:<subject DN>. 0, or -1 (refused; err says why). */
int tls_peer_principal(const struct tls_listener *l, const char *peer_addr, SSL *ssl, char *type, size_t type_len,
                       char *name, size_t name_len, char *err, size_t errlen);

/* Batched writes (tls_batch.c). Fetches are sealed TLS_BATCH_PLAIN bytes
 * at a time (16 full records) and sent with one send(): 16 against 8 cut
 * the broker's CPU per KiB fetched by about 0.15 us, 32 did no better
 * (docs/benchmarks.md). */
#define TLS_RECORD_PLAIN SSL3_RT_MAX_PLAIN_LENGTH
#define TLS_RECORD_MAX (SSL3_RT_MAX_PLAIN_LENGTH + SSL3_RT_MAX_ENCRYPTED_OVERHEAD + SSL3_RT_HEADER_LENGTH)
#define TLS_BATCH_RECORDS 16
#define TLS_BATCH_PLAIN (TLS_BATCH_RECORDS * TLS_RECORD_PLAIN)
#define TLS_BATCH_CIPHER_CAP ((TLS_BATCH_RECORDS + 2) * TLS_RECORD_MAX)

/* One connection's batch state. buf is set only while a batch is open;
 * held is a closed batch's ciphertext not yet all on the socket, standing
 * for held_plain bytes of the caller's plaintext. */
struct tls_batch {
    unsigned char *buf;
    size_t len, cap;
    unsigned char *held;
    size_t held_len, held_off, held_plain;
};

/* Puts the batching filter on top of ssl's socket wbio (after SSL_set_fd);
 * b must outlive ssl. -1 when OpenSSL cannot make the BIO. */
int tls_batch_attach(SSL *ssl, struct tls_batch *b);

/* This thread's staging buffer of TLS_BATCH_PLAIN bytes; NULL out of memory. */
unsigned char *tls_batch_plain_buffer(void);

/* Opens a batch: records written to the SSL go into b->buf. -1 (ENOMEM). */
int tls_batch_begin(struct tls_batch *b);

/* Whether the open batch can take one more full record. */
bool tls_batch_has_room(const struct tls_batch *b);

/* Closes the open batch into held, standing for plain bytes. */
void tls_batch_close(struct tls_batch *b, size_t plain);

/* Writes held to fd: 1 once all of it is out (held freed; held_plain
 * kept), 0 when the socket is full, -1 with errno on a socket error. */
int tls_batch_flush(struct tls_batch *b, int fd);

/* Frees whatever b holds (connection close). */
void tls_batch_free(struct tls_batch *b);

#endif
