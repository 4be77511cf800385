/* Private structures shared by the files of the network layer. */
#ifndef CAIRN_NET_INTERNAL_H
#define CAIRN_NET_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <uv.h>

#include "net/frame_pool.h"
#include "net/request_queue.h"
#include "net/server.h"

#define NET_LOG "net"
/* Small frames are parsed out of this per-connection buffer; larger ones are
 * read straight into their own growing buffer. */
#define NET_INPUT_BUFFER_BYTES (16 * 1024)
/* Frames up to this size get a buffer of their size. A larger one starts in
 * a pooled mapping of this size (or a kept one, already paid for) that
 * doubles as bytes arrive, so a peer announcing a huge frame and sending
 * nothing costs little memory (frame_pool.h). */
#define NET_FRAME_INITIAL_BYTES (256 * 1024)
/* Bytes written per connection per loop wake-up, so one busy connection
 * cannot starve the others sharing its loop. */
#define NET_IO_BUDGET_BYTES (4 * 1024 * 1024)
/* Bytes read per connection per loop wake-up: a request arriving on
 * another connection of the loop waits behind at most this much copying
 * per busy neighbour. At 4 MiB, eight peers streaming 4 MiB frames took a
 * good producer's p99 to 25-28x its run alone; at 64 KiB 3.1x, with the
 * same throughput for a lone producer (docs/benchmarks.md). */
#define NET_READ_BUDGET_BYTES (64 * 1024)

/* Sizes of a connection's principal strings, terminator included. */
#define NET_PRINCIPAL_TYPE_MAX 64
#define NET_PRINCIPAL_NAME_MAX 512

/* Kafka api keys that stay allowed after a session expired (KIP-368). */
#define NET_API_SASL_HANDSHAKE 17
#define NET_API_SASL_AUTHENTICATE 36

struct net_connection;
struct net_loop;

/* A peer address as a connection-limit key; IPv4 is stored IPv4-mapped. */
struct net_ip {
    uint8_t addr[16];
};

struct net_ip_count {
    struct net_ip ip;
    int count;
};

/* An accepted socket on its way from the accept thread to a loop. */
struct net_accepted {
    int fd;
    int listener_index;
    struct net_ip ip; /* counted in server->limits until dropped or closed */
    bool ip_counted;  /* also in its address's count (net_conn_limits_admit_counted) */
};

/* max.connections and max.connections.per.ip. The overrides are fixed at
 * start; the two limits (net_server_set_connection_limits) and the counts
 * are under mutex (admitted by the accept
 * thread, released by the loop that closes the connection); the refusal
 * log fields belong to the accept thread. */
struct net_conn_limits {
    bool initialised;
    pthread_mutex_t mutex;
    int max_total;
    int max_per_ip;
    struct net_ip_count *overrides; /* count = that address's limit */
    size_t override_count;
    bool per_ip; /* a per-address limit is set: keep per-address counts */
    int total;
    struct net_ip_count *open; /* addresses with open connections */
    size_t open_count, open_cap;
    int64_t last_refusal_log_ms;
    uint64_t refusals_unlogged;
};

/* Connection changes a completion carries (net_request_set_principal and
 * friends). Allocated only when a handler asks for one; written by the
 * completing thread, applied and freed on the loop thread. */
struct net_conn_change {
    bool set_principal;
    char principal_type[NET_PRINCIPAL_TYPE_MAX];
    char principal_name[NET_PRINCIPAL_NAME_MAX];
    bool set_session_expiry;
    int64_t session_expiry_ms;
    bool begin_reauthentication;                   /* bound its frames as unauthenticated again */
    const struct net_transport_ops *transport_ops; /* NULL: keep the transport */
    void *transport_state;
    bool set_auth_state;
    void *auth_state; /* freed with auth_state_free unless applied */
    void (*auth_state_free)(void *state);
};

/* A request as allocated by the network layer. Created and filled by the
 * owning loop; read by one io thread while handled; the completion fields are
 * written by the completing thread before it is queued back to the loop. */
struct net_request_impl {
    struct net_request pub;
    struct net_loop *loop;
    struct net_connection *conn; /* dereferenced on the loop thread only */
    /* The connection's principal when the request was read: pub points
     * here, not into the connection, which the loop thread may free while
     * a worker still dispatches (seen at shutdown under ASan). */
    char principal_type[NET_PRINCIPAL_TYPE_MAX];
    char principal_name[NET_PRINCIPAL_NAME_MAX];
    size_t frame_cap;              /* bytes allocated for pub.frame */
    bool frame_pooled;             /* pub.frame is from the server's frame_pool */
    struct net_request_impl *next; /* loop's completed list */
    struct kafka_writer response;
    bool has_response;
    int32_t throttle_ms;
    int32_t delay_ms; /* net_request_delay_response */
    bool close_after;
    struct net_conn_change *change; /* NULL unless the handler asked for one */
    /* net_request_set_cancel: the hook, and whether the connection closed
     * while the handler held the request; under cancel_lock. */
    pthread_mutex_t cancel_lock;
    net_request_cancel_fn cancel_fn;
    void *cancel_arg;
    bool cancelled;
    bool close_on_oom;    /* a change could not be recorded: close rather than ignore it */
    size_t counted_bytes; /* in server->queued_request_bytes until freed */
    /* Produce pipelining (net_request_pipeline_next): the next in the
     * loop's notice list (under the loop's mutex); then, on the loop
     * thread, the next in its connection's parked list, whether it is in
     * that list and whether it completed there (its response waits for
     * those before it). */
    struct net_request_impl *notice_next;
    struct net_request_impl *parked_next;
    bool parked;
    bool parked_done;
};

/* Requests a connection may have parked (handled, waiting to be answered)
 * while it reads the next; beyond it reading waits for the oldest answer. */
#define NET_MAX_PARKED_REQUESTS 16
/* Kafka's api key of Produce: the only requests read past a parked one. */
#define NET_API_PRODUCE 0

/* One client socket. Owned by its loop thread; never touched elsewhere. */
struct net_connection {
    struct net_loop *loop;
    struct net_connection *prev, *next; /* loop's connection list */
    uv_poll_t poll;
    uv_timer_t throttle_timer;
    int handles_open;
    int fd;
    /* Every read and write goes through it; transport.fd == fd. */
    struct net_transport transport;
    /* Installed once the current response is written (net_request_set_transport). */
    const struct net_transport_ops *next_transport_ops;
    void *next_transport_state;
    uint64_t id;
    struct net_ip ip; /* counted in the server's limits until closed */
    bool ip_counted;  /* also in its address's count */
    char peer[64];
    const char *listener_name;
    int16_t security_protocol;
    /* Who the connection acts as; a completion may change it (SASL). */
    char principal_type[NET_PRINCIPAL_TYPE_MAX];
    char principal_name[NET_PRINCIPAL_NAME_MAX];
    /* A completion set the principal (a SASL exchange succeeded): from then
     * on sasl.server.max.receive.size no longer bounds its frames, until a
     * re-authentication begins (net_request_begin_reauthentication). */
    bool authenticated;
    int64_t session_expiry_ms; /* clock_mono_ms() deadline, 0 = none (KIP-368) */
    void *auth_state;          /* net_request_set_auth_state; freed with the connection */
    void (*auth_state_free)(void *state);
    bool closed;     /* socket closed; the struct may wait for its in-flight request */
    int poll_events; /* events currently registered with uv_poll */

    /* input */
    uint8_t *in_buf;
    size_t in_start, in_end;
    struct net_request_impl *reading; /* large frame being read into its own buffer */
    size_t reading_got;
    struct net_request_impl *in_flight; /* at most one per connection being handled */
    /* Produce requests the handler parked (acks=all waiting for the
     * followers) in the order read: the connection reads on meanwhile,
     * and answers in that order. order_hold: the next frame is not a
     * Produce, so it is read once every parked one is answered. */
    struct net_request_impl *parked_head, *parked_tail;
    int parked_count;
    bool order_hold;
    bool waiting_dispatch; /* in_flight is in the loop's blocked list */
    struct net_connection *blocked_next;

    /* output */
    struct kafka_writer out;
    bool out_active;
    size_t out_pos;    /* buffer bytes sent */
    size_t out_splice; /* index of the next splice to send */
    int64_t out_splice_sent;
    bool close_after_write;
    bool throttled;
    bool out_held; /* the response waits for throttle_timer (a failed authentication's delay) */

    int64_t last_activity_ms;
    /* Slow peers (connections.max.idle.ms also bounds these): when the
     * first byte of the request being received arrived, and when the
     * response being written began; 0 = none. */
    int64_t request_started_ms;
    int64_t response_started_ms;
};

enum net_loop_phase { NET_LOOP_RUNNING = 0, NET_LOOP_DRAINING = 1, NET_LOOP_CLOSING = 2 };

/* A network thread. Fields under `mutex` are shared with other threads;
 * the rest belong to the loop thread. */
struct net_loop {
    struct net_server *server;
    int index;
    pthread_t thread;
    bool thread_started;
    bool joined;
    uv_loop_t uv;
    uv_async_t wakeup;
    uv_timer_t idle_timer;
    uv_timer_t close_timer;

    pthread_mutex_t mutex;
    bool alive; /* wakeup may be signalled; false once the loop is shutting its handles */
    struct net_accepted *new_fds;
    size_t new_fd_count, new_fd_cap;
    struct net_request_impl *completed_head, *completed_tail;
    struct net_request_impl *notice_head, *notice_tail; /* net_request_pipeline_next */
    enum net_loop_phase requested_phase;
    int64_t close_deadline_ms;

    /* loop thread only */
    enum net_loop_phase phase;
    struct net_connection *conns;
    size_t open_conn_count; /* connections whose socket is still open */
    struct net_connection *blocked_head, *blocked_tail;
    bool backpressured;
    bool handles_closing;
    /* queued.max.request.bytes dropped below its limit: look again at the
     * connections that stopped reading (set by any thread). */
    atomic_bool memory_recheck;
};

/* A connection creation rate (max.connection.creation.rate) as a token
 * bucket: a second's worth of connections may arrive at once, then one per
 * 1/rate s. Accept thread only. */
struct net_rate_limit {
    int rate; /* per second; INT32_MAX = no limit */
    double tokens;
    int64_t last_ms;
};

struct net_listener {
    int fd;
    int port;
    uv_poll_t poll;
    bool poll_initialised;
    struct net_rate_limit creation_rate; /* this listener's own rate */
    uv_timer_t throttle_timer;           /* resumes accepting once the rate allows */
    bool throttle_timer_initialised;
    bool throttled;
};

/* Owned by the controlling thread; shared fields are atomics or under
 * state_mutex. */
struct net_server {
    struct net_config cfg;
    net_request_handler handler;
    void *handler_ctx;

    struct net_listener listeners[NET_MAX_LISTENERS];
    uv_loop_t accept_uv;
    uv_async_t accept_stop;
    uv_timer_t accept_retry;
    pthread_t accept_thread;
    bool accept_started;
    unsigned next_loop;
    struct net_conn_limits limits;
    struct net_rate_limit creation_rate; /* all listeners together; accept thread only */
    uint64_t accepts_throttled;          /* times a listener paused for a rate; accept thread only */

    struct net_loop *loops;
    int loop_count;
    pthread_t *workers;
    int workers_started;
    struct net_request_queue queue;

    pthread_mutex_t state_mutex;
    pthread_cond_t state_cond;
    int64_t inflight; /* requests created and not yet completed */

    atomic_uint_fast64_t next_connection_id;
    /* queued.max.request.bytes: frame bytes of requests read (or being
     * read) and not yet freed, their peak, and whether a loop stopped
     * reading for them (the freeing thread then wakes the loops). */
    atomic_int_fast64_t queued_request_bytes;
    atomic_int_fast64_t queued_request_bytes_peak;
    atomic_bool memory_muted;
    struct metrics_metric *queued_bytes_gauge, *queued_bytes_peak_gauge;
    struct net_frame_pool frame_pool; /* buffers of frames above NET_FRAME_INITIAL_BYTES */
    bool running;                     /* fully started and not yet stopped */
    bool stopped;
};

/* server.c */
/* queued.max.request.bytes is reached: no connection starts a new request.
 * Any thread; the loops are woken when it no longer holds. */
bool net_server_memory_full(struct net_server *server);
/* A dispatched request is finished (completed, or dropped unhandled). */
void net_server_request_done(struct net_server *server);
/* A request for a frame of frame_len bytes, have of them already read: a
 * small frame gets a buffer of its size; a larger one a pooled buffer of
 * at least have bytes, grown with net_frame_pool_grow as the rest comes. */
struct net_request_impl *net_request_new(struct net_connection *conn, size_t frame_len, size_t have);
void net_request_free(struct net_request_impl *req);
/* The connection closed while the handler holds req: runs its cancel hook. */
void net_request_cancel(struct net_request_impl *req);

/* listener.c */
int net_listeners_open(struct net_server *server, char *err, size_t errlen);
int net_accept_thread_start(struct net_server *server, char *err, size_t errlen);
void net_accept_thread_stop(struct net_server *server);
void net_listeners_close(struct net_server *server);

/* loop.c */
int net_loop_init(struct net_loop *loop, struct net_server *server, int index);
int net_loop_thread_start(struct net_loop *loop);
void net_loop_add_fd(struct net_loop *loop, const struct net_accepted *a);
void net_loop_wake(struct net_loop *loop);
void net_loop_request_phase(struct net_loop *loop, enum net_loop_phase phase, int64_t deadline_ms);
void net_loop_join(struct net_loop *loop);
void net_loop_destroy(struct net_loop *loop);
void net_loop_dispatch(struct net_loop *loop, struct net_connection *conn);
void net_loop_unlink_blocked(struct net_loop *loop, struct net_connection *conn);
/* A connection's socket was closed; lets a closing loop finish. */
void net_loop_connection_closed(struct net_loop *loop);

/* conn_limits.c */
void net_ip_from_sockaddr(const struct sockaddr_storage *ss, struct net_ip *out);
/* Fails on a malformed max.connections.per.ip.overrides (err filled). */
int net_conn_limits_init(struct net_conn_limits *l, const struct net_config *cfg, char *err, size_t errlen);
void net_conn_limits_destroy(struct net_conn_limits *l);
/* Counts a new connection from ip in and returns NULL, or returns the name
 * of the limit it would exceed (its value in *limit) and counts nothing. */
const char *net_conn_limits_admit(struct net_conn_limits *l, const struct net_ip *ip, int *limit);
void net_conn_limits_release(struct net_conn_limits *l, const struct net_ip *ip);
/* The same, saying whether the connection went into its address's count
 * (per-address counting may start after it was admitted), so releasing it
 * never takes from a count it is not in. */
const char *net_conn_limits_admit_counted(struct net_conn_limits *l, const struct net_ip *ip, int *limit,
                                          bool *counted);
void net_conn_limits_release_counted(struct net_conn_limits *l, const struct net_ip *ip, bool counted);
/* Accept thread: logs a refused connection, at most once a second. */
void net_conn_limits_log_refusal(struct net_conn_limits *l, int fd, const char *which, int limit);
void net_rate_limit_init(struct net_rate_limit *r, int rate, int64_t now_ms);
/* 0 when one more connection fits the rate now, else the ms until it will;
 * takes nothing. */
int64_t net_rate_limit_wait_ms(struct net_rate_limit *r, int64_t now_ms);
/* Counts one connection created. */
void net_rate_limit_take(struct net_rate_limit *r);
/* Counts an accepted socket out and closes it. */
void net_accepted_drop(struct net_server *server, const struct net_accepted *a);

/* transport.c */
/* Runs a transport's close op, if it has one (fd may be -1 when the
 * transport was never installed). */
void net_transport_release(const struct net_transport_ops *ops, void *state, int fd);

/* connection.c */
/* KIP-368: true when a request (its frame, header first) must close the
 * connection because the session expired at expiry_ms (0 = never). */
bool net_session_expired_for(int64_t expiry_ms, int64_t now_ms, const uint8_t *frame, size_t frame_len);
struct net_connection *net_connection_open(struct net_loop *loop, const struct net_accepted *a);
/* Loop thread: the handler parked req (net_request_pipeline_next); its
 * connection reads on. */
void net_connection_on_parked(struct net_request_impl *req);
/* Loop thread, after the workers stopped: frees the parked requests that
 * completed; the others belong to their completers. */
void net_connection_abandon_parked(struct net_connection *conn);
void net_connection_close(struct net_connection *conn, const char *why);
void net_connection_update_poll(struct net_connection *conn);
void net_connection_resume(struct net_connection *conn);
void net_connection_on_completed(struct net_request_impl *req);
void net_connection_free_if_done(struct net_connection *conn);

/* connection_write.c */
/* Returns 0 when the response is fully written, 1 when more remains (wait
 * for writability), -1 on a socket error (connection must close). */
int net_connection_write(struct net_connection *conn);
/* Takes the contents of the completed request's response; -1 if unusable. */
int net_connection_set_response(struct net_connection *conn, struct kafka_writer *response);
void net_connection_drop_response(struct net_connection *conn);

#endif
