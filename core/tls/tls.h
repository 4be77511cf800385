/* TLS for listeners: an OpenSSL context per listener, built from Kafka's
 * ssl.* keys (PEM only, KIP-651), and the transport that runs each of the
 * listener's connections over it (see net/transport.h).
 *
 * Threads: tls_listener_create/free run on the main thread, reload and
 * update on any one thread at a time each (serialised with each other);
 * tls_listener_transport_init runs on network loop threads, concurrently
 * with a reload (the context pointer is swapped under a mutex, and every
 * connection holds its own reference to the context it started with). */
#ifndef CAIRN_TLS_TLS_H
#define CAIRN_TLS_TLS_H

#include <stddef.h>
#include <stdint.h>

#include "net/client_transport.h"
#include "net/transport.h"

struct broker_config;
struct cairn_tls_peer;

/* The ssl.* keys one listener uses, in Kafka's names. */
enum tls_key {
    TLS_KEYSTORE_TYPE,
    TLS_KEYSTORE_LOCATION,
    TLS_KEYSTORE_CERTIFICATE_CHAIN,
    TLS_KEYSTORE_KEY,
    TLS_KEY_PASSWORD,
    TLS_TRUSTSTORE_TYPE,
    TLS_TRUSTSTORE_LOCATION,
    TLS_TRUSTSTORE_CERTIFICATES,
    TLS_CLIENT_AUTH,
    TLS_ENABLED_PROTOCOLS,
    TLS_CIPHER_SUITES,
    TLS_ENDPOINT_IDENTIFICATION, /* outgoing links only: "https" (default) or "" */
    TLS_CRL_LOCATION,            /* Cairn's own: PEM file of CRLs checked with the truststore */
    TLS_KEY_COUNT
};

/* "ssl.keystore.type", ... */
const char *tls_key_name(enum tls_key key);

/* One listener's effective values: listener.name.<name>.ssl.* where set,
 * else the broker-wide ssl.* key. Each value and the full key it came from
 * (for error messages) is a private copy; NULL value = not set. */
struct tls_settings {
    char *value[TLS_KEY_COUNT];
    char *source[TLS_KEY_COUNT];
    int64_t handshake_timeout_ms;
};

/* Fills s for listener_name from cfg. 0, or -1 (out of memory). */
int tls_settings_from_config(const struct broker_config *cfg, const char *listener_name, struct tls_settings *s);
/* Sets one value (tests and callers without a broker_config). */
int tls_settings_set(struct tls_settings *s, enum tls_key key, const char *value);
void tls_settings_clear(struct tls_settings *s);
/* dst = a private copy of src. 0, or -1 (out of memory; dst cleared). */
int tls_settings_copy(struct tls_settings *dst, const struct tls_settings *src);

/* Maps a verified client certificate to a principal. Returns 0 with type
 * and name filled, 1 to keep the default (User:<subject DN>), -1 to refuse
 * the connection (err says why). Runs on a network loop thread. */
typedef int (*tls_principal_fn)(void *ctx, const char *listener_name, const char *peer_addr,
                                const struct cairn_tls_peer *peer, char *type, size_t type_len, char *name,
                                size_t name_len, char *err, size_t errlen);

struct tls_listener;

/* Builds the listener's context from s (copied). On a bad file, key or
 * value returns -1 with err naming the key and OpenSSL's reason.
 * map_principal may be NULL (the default principal). */
int tls_listener_create(const char *listener_name, const struct tls_settings *s, tls_principal_fn map_principal,
                        void *map_ctx, struct tls_listener **out, char *err, size_t errlen);

/* Rebuilds the context from the same settings, re-reading every file. New
 * connections use the new one; existing ones keep theirs. On failure the
 * old context stays and err says why. */
int tls_listener_reload(struct tls_listener *l, char *err, size_t errlen);

/* Whether s (another listener's settings, e.g. after a dynamic config
 * change) builds a context: 0, or -1 with err naming the key and the
 * reason. Reads every file s names; the listener is left as it is. */
int tls_listener_check(struct tls_listener *l, const struct tls_settings *s, char *err, size_t errlen);

/* Rebuilds the context from s (copied) when s differs from the listener's
 * settings, and keeps s for later reloads. Returns 1 (applied), 0 (same
 * settings, nothing done) or -1 (the old context and settings stay; err
 * says why). Any thread; serialised with tls_listener_reload. */
int tls_listener_update(struct tls_listener *l, const struct tls_settings *s, char *err, size_t errlen);

/* The listener's name, as created. */
const char *tls_listener_name(const struct tls_listener *l);

/* After the network server stopped (no transport_init can run). */
void tls_listener_free(struct tls_listener *l);

/* A net_transport_init_fn; ctx is the struct tls_listener. */
int tls_listener_transport_init(void *ctx, struct net_transport *t);

/* Told of each client the listener refused during the TLS handshake (no
 * client certificate where one is required, an untrusted or expired one,
 * a protocol error), with OpenSSL's reason: Kafka counts these as failed
 * authentications. A refusal of the certificate's principal goes to
 * map_principal instead. Runs on a network loop thread. */
typedef void (*tls_refusal_fn)(void *ctx, const char *listener_name, const char *peer_addr, const char *why);
/* Before the network server starts; fn NULL: nobody is told. */
void tls_listener_set_refusal_hook(struct tls_listener *l, tls_refusal_fn fn, void *ctx);

/* ---- outgoing links (the broker's outbound client: quorum, controller,
 * replica fetchers, transaction markers) ----
 * The server certificate is always verified against the truststore
 * (ssl.truststore.*, required); the keystore (ssl.keystore.*), when set, is
 * presented to listeners that ask for a client certificate; with
 * ssl.endpoint.identification.algorithm=https (Kafka's default) the
 * certificate must also name the host connected to (a DNS or IP SAN).
 *
 * Threads: create/free on any one thread, while no client uses it; the
 * operations run on the outbound clients' loop threads, concurrently with
 * a reload on another thread (the context is swapped under a mutex, and
 * every connection holds its own reference to the one it started with). */
struct tls_client;

/* link_name names the link in errors and logs ("controller", ...). -1
 * with err naming the key and OpenSSL's reason. */
int tls_client_create(const char *link_name, const struct tls_settings *s, struct tls_client **out, char *err,
                      size_t errlen);
/* Rebuilds the context from the same settings, re-reading every file:
 * new connections present the new keystore and trust the new truststore,
 * open ones keep theirs. On failure the old context stays and err names
 * the link, the key and the file. */
int tls_client_reload(struct tls_client *c, char *err, size_t errlen);
/* As tls_listener_check and tls_listener_update, for a link: the host
 * name check (ssl.endpoint.identification.algorithm) stays as created. */
int tls_client_check(struct tls_client *c, const struct tls_settings *s, char *err, size_t errlen);
int tls_client_update(struct tls_client *c, const struct tls_settings *s, char *err, size_t errlen);
void tls_client_free(struct tls_client *c);

/* For net_client_config.transport_ops, with transport_ctx the tls_client. */
extern const struct client_transport_ops tls_client_transport_ops;

/* The transport's ops, for tests and log lines. */
extern const struct net_transport_ops tls_transport_ops;

#endif
