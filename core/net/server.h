/* Network layer: listeners, connections, Kafka framing and the request
 * threads that run the handler.
 *
 * Threads: one accept thread, num_network_threads libuv loops (each owns its
 * connections and does all their socket I/O), and num_io_threads workers that
 * call the request handler. A connection has at most one request being
 * handled at a time, and answers in request order; Produce requests whose
 * handler parked them do not stop it reading the next Produce
 * (net_request_pipeline_next).
 *
 * Thread-safety: net_server_start/stop/free are called from one controlling
 * thread. net_request_complete may be called from any thread. */
#ifndef CAIRN_NET_SERVER_H
#define CAIRN_NET_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/transport.h"
#include "protocol/wire.h"

#define NET_MAX_LISTENERS 8

/* Kafka's SecurityProtocol ids, as sent in metadata endpoints. */
enum net_security_protocol {
    NET_SECURITY_PLAINTEXT = 0,
    NET_SECURITY_SSL = 1,
    NET_SECURITY_SASL_PLAINTEXT = 2,
    NET_SECURITY_SASL_SSL = 3,
};

/* "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL", or "UNKNOWN". */
const char *net_security_protocol_name(int protocol);

struct net_listener_config {
    char name[32];             /* "PLAINTEXT" */
    char host[256];            /* "", "0.0.0.0", "::", an IP or a host name */
    int port;                  /* 0 = ephemeral, see net_server_bound_port */
    int16_t security_protocol; /* enum net_security_protocol; default PLAINTEXT */
    /* Installs the transport of each connection of this listener; NULL
     * keeps the plain one. A listener whose protocol is not PLAINTEXT is
     * refused unless it has one (no TLS layer exists yet). */
    net_transport_init_fn transport_init;
    void *transport_ctx; /* passed to transport_init; outlives the server */
    /* listener.name.<l>.max.connection.creation.rate: new connections per
     * second on this listener; accepts beyond it wait (INT32_MAX = none,
     * the default from net_config_defaults). */
    int max_connection_creation_rate;
};

/* A connection that had not authenticated, closed by the network layer
 * itself before any request of it reached the handler: its frame's size
 * prefix exceeded sasl.server.max.receive.size. Everything points into the
 * connection or the caller's stack and is valid during the call only. */
struct net_auth_refusal {
    uint64_t connection_id;
    const char *peer;          /* "127.0.0.1:53422" or "[::1]:53422" */
    const char *listener_name; /* lives as long as the server */
    int16_t security_protocol; /* enum net_security_protocol */
    const char *principal_type;
    const char *principal_name;
    /* The connection's authentication state (net_request_set_auth_state),
     * or NULL. No request of the connection is with a handler during the
     * call, so the hook may read and change what it points to. */
    void *auth_state;
    const char *reason; /* what happened, for the log and the audit */
};

/* Runs on the connection's loop thread just before the connection closes.
 * It must not block and must not allocate per refused byte. */
typedef void (*net_auth_refusal_fn)(void *ctx, const struct net_auth_refusal *refusal);

/* Plain data; copied by net_server_start. */
struct net_config {
    struct net_listener_config listeners[NET_MAX_LISTENERS];
    int listener_count;
    int num_network_threads;          /* num.network.threads, default 3 */
    int num_io_threads;               /* num.io.threads, default 8 */
    int queued_max_requests;          /* queued.max.requests, default 500 */
    int64_t socket_request_max_bytes; /* socket.request.max.bytes, default 104857600 */
    /* sasl.server.max.receive.size, default 524288: on SASL listeners, the
     * largest frame (size prefix excluded) of a connection that has not
     * authenticated yet; a larger announced size closes it unread. */
    int64_t sasl_server_max_receive_size;
    /* Told of each connection closed for that bound (NULL: nobody), e.g.
     * to audit it as a failed authentication; ctx outlives the server. */
    net_auth_refusal_fn on_auth_refusal;
    void *auth_refusal_ctx;
    int64_t connections_max_idle_ms; /* connections.max.idle.ms, default 600000; <= 0 disables */
    int socket_send_buffer_bytes;    /* socket.send.buffer.bytes, default 102400; -1 = OS default */
    int socket_receive_buffer_bytes; /* socket.receive.buffer.bytes, default 102400; -1 = OS default */
    /* New connections beyond these are closed at accept. */
    int max_connections;        /* max.connections (all listeners), default INT32_MAX */
    int max_connections_per_ip; /* max.connections.per.ip, default INT32_MAX */
    /* max.connections.per.ip.overrides: "host:count,..." (a host name
     * counts for each address it resolves to at start), default "" */
    char max_connections_per_ip_overrides[1024];
    /* max.connection.creation.rate: new connections per second across all
     * listeners, default INT32_MAX (no limit). Beyond it, or beyond a
     * listener's own rate, the listener stops accepting until the rate
     * allows one more: connections wait in the kernel's backlog, as
     * Kafka's acceptor throttles. */
    int max_connection_creation_rate;
    int socket_listen_backlog_size; /* socket.listen.backlog.size, default 50 */
    /* queued.max.request.bytes: bytes of request frames read and not yet
     * answered; at or above it no connection starts reading a new request
     * until it drops. -1 (default) = no limit. */
    int64_t queued_max_request_bytes;
};

/* One received request, handed to the handler on an io thread. The
 * structure is owned by the network layer; it stays valid until
 * net_request_complete is called for it, and must not be touched after. */
struct net_request {
    uint64_t connection_id;
    char peer[64];             /* "127.0.0.1:53422" or "[::1]:53422" */
    const char *listener_name; /* lives as long as the server */
    int16_t security_protocol; /* the listener's, enum net_security_protocol */
    /* The connection's principal ("User", "ANONYMOUS" until authenticated);
     * valid until net_request_complete. */
    const char *principal_type;
    const char *principal_name;
    /* The connection's authentication state (SASL exchange, NULL until a
     * handler installs one with net_request_set_auth_state). The handler of
     * the connection's one in-flight request may read and change what it
     * points to; the connection owns and frees it. */
    void *auth_state;
    uint8_t *frame; /* request bytes after the 4-byte size prefix */
    size_t frame_len;
    int64_t received_mono_ns; /* clock_mono_ns() when the last byte arrived */
    /* private fields follow (the network layer allocates a larger object) */
};

/* Runs on an io thread. It must eventually lead to exactly one
 * net_request_complete call for req, from this or any other thread. */
typedef void (*net_request_handler)(struct net_request *req, void *ctx);

struct net_server;

/* Fills cfg with Kafka's defaults and one PLAINTEXT listener on 0.0.0.0:9092. */
void net_config_defaults(struct net_config *cfg);

/* Binds every listener and starts all threads. Returns 0, or -1 with err
 * filled (a bad config value, or a listener that cannot be bound). */
int net_server_start(const struct net_config *cfg, net_request_handler handler, void *ctx, struct net_server **out,
                     char *err, size_t errlen);

/* The port a listener is bound to (the real one when configured as 0), or -1. */
int net_server_bound_port(struct net_server *server, int listener_index);

/* Finishes a request. response may be NULL (send nothing, e.g. Produce with
 * acks=0); otherwise it holds the complete response frame, size prefix
 * included, and its contents are moved into the network layer: *response is
 * left zeroed and the struct itself stays the caller's. The connection reads
 * its next request once the response is written and throttle_ms has passed
 * (KIP-219 muting), or is closed after the response when close_after is set.
 * Callable from any thread, exactly once per request. After net_server_stop
 * has given up on a request, completing it just frees it; every request must
 * be completed before net_server_free. */
/* Holds the response of this request, and the close after it, for
 * delay_ms once complete (Kafka's connection.failed.authentication.delay.ms);
 * nothing more is read meanwhile. Call before net_request_complete. */
void net_request_delay_response(struct net_request *req, int32_t delay_ms);
void net_request_complete(struct net_request *req, struct kafka_writer *response, int32_t throttle_ms,
                          bool close_after);

/* Called once, on the connection's loop thread (or, when the connection
 * closed before the hook was set, at once on the setting thread), when the
 * connection closes while its request is with the handler, so a parked
 * request can give up early. It must not block and must not complete the
 * request itself: it only tells the request's owner, which then completes
 * it as usual (the response is dropped). Completing the request removes
 * the hook; net_request_complete waits for a running hook to return, so
 * after it arg is never used. One hook per request; a second replaces it. */
typedef void (*net_request_cancel_fn)(void *arg);

/* For a Produce its handler has appended and parked (acks=all waiting for
 * the followers): the connection reads and dispatches the next request
 * now if it is a Produce too, instead of once this one is answered.
 * Responses still leave in request order, and a request of another kind
 * waits until every parked one is answered. Call at most once, from the
 * handler, before anything can complete req. */
void net_request_pipeline_next(struct net_request *req);
void net_request_set_cancel(struct net_request *req, net_request_cancel_fn fn, void *arg);

/* Changes to the connection that a request's completion carries, for
 * authentication (SASL). Called by the handler before net_request_complete,
 * from the thread that completes; applied on the connection's loop thread
 * when the completion is processed, before its next request is read. */

/* From then on the connection acts as type:name (e.g. "User", "alice").
 * Returns -1, changing nothing, if either is empty or too long (a name is
 * never truncated into another one). */
int net_request_set_principal(struct net_request *req, const char *type, const char *name);

/* KIP-368: once clock_mono_ms() reaches expiry_mono_ms, the connection is
 * closed on its next request that is not SaslHandshake or SaslAuthenticate.
 * 0 means the session never expires (the default). */
void net_request_set_session_expiry(struct net_request *req, int64_t expiry_mono_ms);

/* KIP-368 re-authentication began: from the connection's next frame,
 * sasl.server.max.receive.size bounds it again, until a completion sets
 * its principal (Kafka reads re-authentication tokens with that bound too).
 * If the change cannot be recorded, the connection closes after the
 * response. */
void net_request_begin_reauthentication(struct net_request *req);

/* Gives the connection a new authentication state (replacing and freeing
 * any previous one with its free function) from then on; free_fn(state)
 * runs when the connection is freed, or at once if the completion is never
 * applied. state may be the current one (to set it again is a no-op).
 * Returns -1 (state freed, connection closed after the response)
 * when the change cannot be recorded. */
int net_request_set_auth_state(struct net_request *req, void *state, void (*free_fn)(void *state));

/* Replaces the connection's transport once this request's response is
 * written: the old one's close runs, then ops/state take over (ops->close
 * frees state, also when the connection closes before the swap). A client
 * must wait for that response before using the new transport; bytes it
 * pipelined past it close the connection. */
void net_request_set_transport(struct net_request *req, const struct net_transport_ops *ops, void *state);

/* Stops accepting, stops reading new requests, waits up to grace_ms for
 * in-flight requests to complete, writes out pending responses, closes every
 * connection and joins all threads. Idempotent. Must not be called from a
 * network or io thread (nor from a signal handler). */
void net_server_stop(struct net_server *server, int64_t grace_ms);

/* Changes max.connections and max.connections.per.ip of a started server
 * (any thread); connections already open stay open. Per-address counts
 * begin when the first per-address limit is set, so an address's
 * connections opened before that do not count against it. */
void net_server_set_connection_limits(struct net_server *server, int max_connections, int max_connections_per_ip);

/* Stops (with no grace) if still running, then frees the server. */
void net_server_free(struct net_server *server);

#endif
