/* Outbound Kafka protocol client: the broker connecting out to other nodes
 * (replica fetchers, the Raft quorum, transaction marker senders).
 *
 * Shaped after Kafka's NetworkClient: one connection per node, opened with
 * exponential backoff (reconnect.backoff.ms .. reconnect.backoff.max.ms,
 * +/-20% jitter) and a setup timeout; ApiVersions on every new connection
 * (v3, falling back as Kafka clients do), then SASL when configured; each request sent at
 * min(highest version Cairn's codecs know, broker's max) unless pinned; up
 * to max_in_flight requests per connection, answered in order.
 *
 * Threads: net_client_create starts one thread running one libuv loop. That
 * thread owns every connection and does all socket I/O. Every completion
 * callback runs on that thread; a caller that needs its own thread posts the
 * result there (copying it, or keeping it with net_client_result_keep).
 * Callbacks must not block and must not call net_client_destroy; they may
 * call net_client_send.
 *
 * Thread-safety: net_client_add_node, net_client_send, net_client_api_range
 * and net_client_node_stats may be called from any thread.
 * net_client_destroy is called once, from any thread but the client's. */
#ifndef CAIRN_NET_CLIENT_H
#define CAIRN_NET_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/wire.h"

struct client_transport_ops;

/* Plain data; copied by net_client_create. */
struct net_client_config {
    char client_id[64];                  /* request header client_id */
    char software_name[64];              /* ApiVersions v3 client_software_name */
    char software_version[32];           /* ApiVersions v3 client_software_version */
    int64_t reconnect_backoff_ms;        /* reconnect.backoff.ms, default 50 */
    int64_t reconnect_backoff_max_ms;    /* reconnect.backoff.max.ms, default 1000 */
    int64_t connection_setup_timeout_ms; /* socket.connection.setup.timeout.ms, default 10000 */
    int64_t request_timeout_ms;          /* request.timeout.ms, default 30000 */
    int max_in_flight;                   /* max.in.flight.requests.per.connection, default 5 */
    int64_t max_response_bytes;          /* cap on one response frame, default 104857600 */
    /* NULL: plain TCP. Otherwise every connection runs over these
     * operations (net/client_transport.h), e.g. TLS from tls/tls.h, with
     * transport_ctx shared by all of them; it must outlive the client. */
    const struct client_transport_ops *transport_ops;
    void *transport_ctx;
    /* Empty: no SASL. Otherwise every new connection authenticates after
     * ApiVersions (SaslHandshake v1, SaslAuthenticate rounds of
     * sasl/sasl_client.h: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; OAUTHBEARER) before any
     * request goes out; a refusal is a connection failure (backoff, and a
     * warning naming sasl_link, the mechanism and the server's message); the
     * calls waiting for that node then fail with NET_CLIENT_AUTH_FAILED, as
     * Kafka's clients fail them with an AuthenticationException. */
    char sasl_mechanism[32];
    char sasl_username[256], sasl_password[256];
    /* OAUTHBEARER: the token to send, a copy in *token (freed by the
     * client) and 0, or -1 with err; called on the client's thread for
     * every authentication, so it must not block (sasl_username then only
     * names the client in log lines). sasl_token_ctx must outlive the
     * client. */
    int (*sasl_token)(void *ctx, char **token, char *err, size_t errlen);
    void *sasl_token_ctx;
    /* GSSAPI: the service principal's first part (<service>/<host>), the
     * host being the one dialled; the node's own principal is krb5's
     * (the client keytab, KRB5_CLIENT_KTNAME). sasl_username names it in
     * log lines. */
    char sasl_kerberos_service[64];
    char sasl_link[32]; /* names the link in log lines; empty: no log line (the caller reports) */
};

enum net_client_status {
    NET_CLIENT_OK = 0,
    NET_CLIENT_NETWORK_ERROR,       /* the connection died with the request in flight */
    NET_CLIENT_TIMED_OUT,           /* request timeout passed */
    NET_CLIENT_UNSUPPORTED_VERSION, /* the node does not serve the API (or pinned version) */
    NET_CLIENT_CANCELLED,           /* the client was destroyed first */
    NET_CLIENT_UNKNOWN_NODE,        /* no net_client_add_node for the node id */
    NET_CLIENT_BAD_RESPONSE,        /* the response did not decode */
    NET_CLIENT_ENCODE_FAILED,       /* the request did not encode */
    NET_CLIENT_AUTH_FAILED,         /* the node refused the SASL authentication (see auth_error) */
};

const char *net_client_status_name(enum net_client_status s);
/* The Kafka error code a caller would surface for s (NONE for OK;
 * NETWORK_EXCEPTION for network errors and cancellation). */
int16_t net_client_status_kafka_error(enum net_client_status s);

/* What a completion callback gets. Valid until the callback returns unless
 * kept with net_client_result_keep. The response struct and its arrays live
 * in an arena; its strings, bytes and records point into the response frame;
 * the client owns both. */
struct net_client_result {
    enum net_client_status status;
    char error[320]; /* human-readable detail when status != OK */
    int32_t node_id;
    int16_t api_key;
    int16_t api_version; /* version sent (-1 if never sent) */
    /* AUTH_FAILED: the node's error code (SASL_AUTHENTICATION_FAILED,
     * UNSUPPORTED_SASL_MECHANISM...; -1 when the refusal was the client's,
     * e.g. a server that did not prove itself), and error holds only the
     * node's message (or the mechanisms it enables). */
    int16_t auth_error;
    void *response; /* decoded response struct (e.g. struct metadata_response *); NULL unless OK,
                            * and NULL for a no_response request */
    /* private */
    uint8_t *frame_;
    struct kafka_arena arena_;
};

typedef void (*net_client_done_fn)(struct net_client_result *result, void *ctx);

/* Custom body encoding, for callers that do not hold a generated struct
 * (e.g. record bytes assembled elsewhere). Returns 0 or -1. */
typedef int (*net_client_encode_fn)(struct kafka_writer *w, int16_t version, void *ctx);

struct net_client_request {
    int32_t node_id;
    int16_t api_key;
    int16_t pinned_version; /* -1: negotiate */
    /* The request struct for api_key's generated codec. It (and what it
     * points to) must stay valid until done runs: it is encoded on the
     * client's thread once the version is known. Ignored when encode is set. */
    const void *body;
    net_client_encode_fn encode;
    void *encode_ctx;
    /* 0: the config's request_timeout_ms. Counted from net_client_send, so
     * it also bounds waiting for a connection. */
    int64_t timeout_ms;
    net_client_done_fn done; /* required; called exactly once */
    void *ctx;
    /* The broker sends no answer (Produce with acks=0): done runs with OK
     * and no response once the request is written. Set automatically for a
     * Produce body with acks 0; set it for an encode callback that writes one. */
    bool no_response;
    /* A failed connection attempt to the node fails the request at once
     * (NETWORK_ERROR) instead of leaving it for the next attempt: for a
     * caller with other brokers to ask, or its own retry loop. */
    bool fail_fast;
};

/* Live counters of one node's connection, for monitoring and tests. */
struct net_client_node_stats {
    uint64_t connect_attempts;
    uint64_t connect_failures;    /* refused, setup timeout, negotiation failure */
    uint64_t connections;         /* connections that finished ApiVersions */
    int64_t last_backoff_ms;      /* delay chosen after the last failure */
    int peak_in_flight;           /* most requests on the wire at once */
    bool ready;                   /* connected and negotiated now */
    int16_t api_versions_version; /* ApiVersions version that succeeded, -1 before */
};

struct net_client;

/* Fills cfg with the defaults above (client_id "cairn-broker"). */
void net_client_config_defaults(struct net_client_config *cfg);

/* Starts the client thread. Returns 0, or -1 with err filled. */
int net_client_create(const struct net_client_config *cfg, struct net_client **out, char *err, size_t errlen);

/* Adds a node or changes its address (an open connection to the old
 * address is closed; its in-flight requests fail with NETWORK_ERROR).
 * Connections open lazily, on the first request. Returns 0 or -1. */
int net_client_add_node(struct net_client *c, int32_t node_id, const char *host, int port);

/* Queues a request. Returns 0, after which done is called exactly once; or
 * -1 with err filled (unknown API key, pinned version outside the codecs'
 * range, client being destroyed), in which case done is never called. */
int net_client_send(struct net_client *c, const struct net_client_request *req, char *err, size_t errlen);

/* Version range the node advertised for api_key on its current (or last)
 * connection. Returns 0, or -1 when not negotiated yet or not served. */
int net_client_api_range(struct net_client *c, int32_t node_id, int16_t api_key, int16_t *min_version,
                         int16_t *max_version);

/* Returns 0, or -1 for an unknown node. */
int net_client_node_stats(struct net_client *c, int32_t node_id, struct net_client_node_stats *out);

/* Takes the result's response, frame and arena out of the callback's
 * hands: the pointer stays valid until net_client_kept_free. Call only
 * inside the callback; returns NULL on allocation failure. */
struct net_client_kept;
struct net_client_kept *net_client_result_keep(struct net_client_result *result);
void *net_client_kept_response(const struct net_client_kept *k);
void net_client_kept_free(struct net_client_kept *k);

/* Completes every request not yet completed with CANCELLED (each exactly
 * once, on the client's thread), closes every connection, joins the thread
 * and frees the client. Called from a completion callback it only logs an
 * error and returns (the thread cannot join itself). */
void net_client_destroy(struct net_client *c);

#endif
