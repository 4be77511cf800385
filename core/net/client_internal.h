/* Private structures of the outbound client (client.c, client_conn.c,
 * client_socket.c).
 *
 * Ownership: everything here belongs to the client's loop thread except the
 * fields marked "under mutex", which other threads read or append to. */
#ifndef CAIRN_NET_CLIENT_INTERNAL_H
#define CAIRN_NET_CLIENT_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <netdb.h>
#include <uv.h>

#include "net/client.h"
#include "net/client_frame.h"

#include "net/client_transport.h"

struct sasl_client;
struct client_gssapi;

/* ---- requests ---- */

struct client_call {
    struct client_call *next;
    int32_t node_id;
    int16_t api_key;
    int16_t pinned_version;
    int16_t version; /* chosen when sent; -1 before */
    const struct kafka_api_desc *desc;
    const void *body;
    net_client_encode_fn encode;
    void *encode_ctx;
    net_client_done_fn done;
    void *ctx;
    int64_t deadline_ms; /* monotonic */
    int32_t correlation_id;
    bool internal;             /* the connection's own ApiVersions or SASL */
    bool no_response;          /* complete once written (Produce acks=0) */
    bool fail_fast;            /* a failed connection attempt fails it too */
    int16_t auth_error;        /* result.auth_error when failed with AUTH_FAILED */
    struct kafka_writer frame; /* encoded request while in flight */
    size_t written;            /* bytes of frame already on the socket */
};

struct client_call_list {
    struct client_call *head, *tail;
    int count;
};

void client_list_push(struct client_call_list *l, struct client_call *c);
struct client_call *client_list_pop(struct client_call_list *l);

/* ---- nodes ---- */

enum client_node_state {
    CLIENT_NODE_IDLE,           /* no connection; reconnect once backoff_until passes */
    CLIENT_NODE_CONNECTING,     /* TCP (and transport) setup */
    CLIENT_NODE_NEGOTIATING,    /* ApiVersions in flight */
    CLIENT_NODE_AUTHENTICATING, /* SaslHandshake / SaslAuthenticate in flight */
    CLIENT_NODE_READY,
};

#define CLIENT_API_KEYS 128

struct client_node {
    struct client_node *next;
    struct net_client *client;
    int32_t id;
    char host[256];
    int port;
    enum client_node_state state;
    struct client_transport transport;
    uv_poll_t *poll; /* per connection; freed by its close callback */
    int poll_events;
    uint64_t attempt;                 /* counts connection attempts; tells a stale lookup */
    struct client_resolve *resolve;   /* host name lookup in progress, or NULL */
    struct addrinfo *addrs;           /* this attempt's addresses (freed on disconnect) */
    const struct addrinfo *next_addr; /* tried when the current one fails */
    int64_t setup_deadline_ms;
    int64_t backoff_until_ms;
    uint32_t failures; /* consecutive, reset once ready */
    int32_t next_correlation_id;
    struct client_call_list waiting;   /* not sent yet, in submission order */
    struct client_call_list in_flight; /* sent or being written, in order */
    struct client_frame_reader reader;
    int16_t api_versions_sent;
    struct sasl_client *sasl; /* while authenticating, else NULL */
    uint8_t *sasl_msg;        /* OAUTHBEARER's initial response while authenticating, else NULL */
    size_t sasl_msg_len;
    struct client_gssapi *gssapi; /* GSSAPI's Cyrus exchange while authenticating, else NULL */
    bool gssapi_sent_last;        /* the last token is out: the next success completes */
    int64_t session_end_ms;       /* SASL session lifetime (KIP-368) nearly over: reconnect when idle; 0 none */
    /* Under the client mutex: read by net_client_api_range / _node_stats. */
    int16_t api_min[CLIENT_API_KEYS], api_max[CLIENT_API_KEYS]; /* -1: not served */
    bool versions_known;
    struct net_client_node_stats stats;
    /* Why the last connection attempt that never became ready failed ("" once
     * one is ready): a request that times out waiting names it. */
    char last_failure[160];
};

/* ---- the client ---- */

struct net_client {
    struct net_client_config cfg;
    uv_loop_t loop;
    uv_async_t wakeup;
    uv_timer_t timer;
    pthread_t thread;
    struct client_node *nodes; /* loop thread's; stats fields under mutex */
    uint32_t rng;              /* jitter; loop thread */
    pthread_mutex_t mutex;
    /* Under mutex: */
    bool stopping;
    struct client_call_list inbox;
    struct client_node *new_nodes; /* add/change requests, applied by the loop */
};

int64_t client_now_ms(void);
/* Completes a call (runs its callback unless internal) and frees it. */
void client_call_finish(struct client_call *call, enum net_client_status status, int16_t version, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Delivers a decoded response (frame is the malloc'd response frame). */
void client_call_deliver(struct client_call *call, uint8_t *frame, size_t frame_len, long body_at);
struct client_node *client_find_node(struct net_client *c, int32_t id);
/* Re-arms the timer for the earliest deadline of any node or call. */
void client_rearm_timer(struct net_client *c);
double client_jitter_unit(struct net_client *c);

/* client_conn.c: one node's connection, all on the loop thread. */
/* Moves waiting calls out (connects first when needed). */
void client_node_kick(struct client_node *n);
/* Checks setup, request and backoff deadlines. */
void client_node_tick(struct client_node *n, int64_t now);
/* Earliest deadline the node cares about, or INT64_MAX. */
int64_t client_node_next_deadline(const struct client_node *n);
/* Closes the connection: in-flight calls fail with `status`; with
 * count_failure the reconnect backs off. */
void client_node_disconnect(struct client_node *n, enum net_client_status status, bool count_failure, const char *why);
/* Fails the connection with the reason given, counting a failure. */
void client_node_failed(struct client_node *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Puts one of the connection's own requests (ApiVersions, SASL) in flight
 * ahead of any waiting call; 0, or -1 after failing the connection. */
int client_node_send_internal(struct client_node *n, int16_t api_key, int16_t version, const void *body);
/* Marks the connection usable (negotiated, and authenticated with SASL). */
void client_node_ready(struct client_node *n);

/* client_gssapi.c: Cyrus SASL's GSSAPI client. start/step give the token
 * to send (valid until the next call): 1 more rounds follow, 0 it is the
 * last, -1 failed (err). */
int client_gssapi_start(const char *service, const char *host, struct client_gssapi **out, const uint8_t **tok,
                        size_t *len, char *err, size_t errlen);
int client_gssapi_step(struct client_gssapi *g, const uint8_t *in, size_t in_len, const uint8_t **tok, size_t *len,
                       char *err, size_t errlen);
void client_gssapi_free(struct client_gssapi *g);

/* client_sasl.c: authentication of a new connection (cfg.sasl_mechanism). */
/* After ApiVersions: SaslHandshake, then SaslAuthenticate rounds. */
void client_sasl_start(struct client_node *n);
/* The answer to one of those (body of the response frame). */
void client_sasl_on_response(struct client_node *n, int16_t api_key, int16_t version, const uint8_t *body, size_t len);
/* Frees the exchange's state (on disconnect). */
void client_sasl_end(struct client_node *n);

/* Fails every call of the node with status (destroy, unknown node). */
void client_node_fail_all(struct client_node *n, enum net_client_status status, const char *why);

#endif
