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

#endif
