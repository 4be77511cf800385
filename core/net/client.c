/* Outbound client: lifecycle, the loop thread, cross-thread submission,
 * timers and completion. Connections are in client_conn.c. */
#include "net/client.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "net/client_internal.h"
#include "protocol/generated/errors.h"
#include "protocol/generated/produce_request.h"
#include "util/clock.h"
#include "util/lock_check.h"
#include "util/logger.h"

#define PRODUCE_KEY 0

void net_client_config_defaults(struct net_client_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    snprintf(cfg->client_id, sizeof cfg->client_id, "cairn-broker");
    snprintf(cfg->software_name, sizeof cfg->software_name, "cairn");
    snprintf(cfg->software_version, sizeof cfg->software_version, "0.1.0");
    cfg->reconnect_backoff_ms = 50;
    cfg->reconnect_backoff_max_ms = 1000;
    cfg->connection_setup_timeout_ms = 10000;
    cfg->request_timeout_ms = 30000;
    cfg->max_in_flight = 5;
    cfg->max_response_bytes = 104857600;
}

const char *net_client_status_name(enum net_client_status s)
{
    switch (s) {
    case NET_CLIENT_OK:
        return "OK";
    case NET_CLIENT_NETWORK_ERROR:
        return "NETWORK_ERROR";
    case NET_CLIENT_TIMED_OUT:
        return "TIMED_OUT";
    case NET_CLIENT_UNSUPPORTED_VERSION:
        return "UNSUPPORTED_VERSION";
    case NET_CLIENT_CANCELLED:
        return "CANCELLED";
    case NET_CLIENT_UNKNOWN_NODE:
        return "UNKNOWN_NODE";
    case NET_CLIENT_BAD_RESPONSE:
        return "BAD_RESPONSE";
    case NET_CLIENT_AUTH_FAILED:
        return "AUTH_FAILED";
    case NET_CLIENT_ENCODE_FAILED:
        return "ENCODE_FAILED";
    }
    return "?";
}

int16_t net_client_status_kafka_error(enum net_client_status s)
{
    switch (s) {
    case NET_CLIENT_OK:
        return KAFKA_ERR_NONE;
    case NET_CLIENT_TIMED_OUT:
        return KAFKA_ERR_REQUEST_TIMED_OUT;
    case NET_CLIENT_UNSUPPORTED_VERSION:
        return KAFKA_ERR_UNSUPPORTED_VERSION;
    case NET_CLIENT_UNKNOWN_NODE:
        return KAFKA_ERR_BROKER_NOT_AVAILABLE;
    case NET_CLIENT_BAD_RESPONSE:
        return KAFKA_ERR_CORRUPT_MESSAGE;
    case NET_CLIENT_AUTH_FAILED:
        return KAFKA_ERR_SASL_AUTHENTICATION_FAILED;
    case NET_CLIENT_NETWORK_ERROR:
    case NET_CLIENT_CANCELLED:
    case NET_CLIENT_ENCODE_FAILED:
        return KAFKA_ERR_NETWORK_EXCEPTION;
    }
    return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
}

int64_t client_now_ms(void)
{
    return clock_mono_ms();
}

void client_list_push(struct client_call_list *l, struct client_call *c)
{
    c->next = NULL;
    if (l->tail)
        l->tail->next = c;
    else
        l->head = c;
    l->tail = c;
    l->count++;
}

struct client_call *client_list_pop(struct client_call_list *l)
{
    struct client_call *c = l->head;
    if (!c)
        return NULL;
    l->head = c->next;
    if (!l->head)
        l->tail = NULL;
    l->count--;
    c->next = NULL;
    return c;
}

double client_jitter_unit(struct net_client *c)
{
    /* xorshift32: jitter needs spread, not unpredictability. */
    uint32_t x = c->rng;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c->rng = x;
    return (double)(x % 1000000u) / 1000000.0;
}

/* ---- completion ---- */

static void result_release(struct net_client_result *r)
{
    kafka_arena_free(&r->arena_);
    free(r->frame_);
    r->frame_ = NULL;
}

static void call_free(struct client_call *call)
{
    if (call->frame.buf || call->frame.splices)
        kafka_writer_free(&call->frame);
    free(call);
}

void client_call_finish(struct client_call *call, enum net_client_status status, int16_t version, const char *fmt, ...)
{
    if (!call->internal) {
        struct net_client_result r;
        memset(&r, 0, sizeof r);
        r.status = status;
        r.node_id = call->node_id;
        r.api_key = call->api_key;
        r.api_version = version;
        r.auth_error = call->auth_error;
        kafka_arena_init(&r.arena_);
        if (fmt) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(r.error, sizeof r.error, fmt, ap);
            va_end(ap);
        }
        call->done(&r, call->ctx);
        result_release(&r);
    }
    call_free(call);
}

void client_call_deliver(struct client_call *call, uint8_t *frame, size_t frame_len, long body_at)
{
    struct net_client_result r;
    memset(&r, 0, sizeof r);
    r.node_id = call->node_id;
    r.api_key = call->api_key;
    r.api_version = call->version;
    r.frame_ = frame;
    kafka_arena_init(&r.arena_);
    r.response = kafka_arena_alloc(&r.arena_, call->desc->response_size_of);
    if (!r.response) {
        r.status = NET_CLIENT_BAD_RESPONSE;
        snprintf(r.error, sizeof r.error, "out of memory decoding %s", call->desc->name);
    } else {
        call->desc->response_init(r.response);
        struct kafka_reader rd;
        kafka_reader_init(&rd, frame + body_at, frame_len - (size_t)body_at);
        if (call->desc->response_decode(r.response, &rd, call->version, &r.arena_) != 0) {
            r.status = NET_CLIENT_BAD_RESPONSE;
            r.response = NULL;
            snprintf(r.error, sizeof r.error, "malformed %s v%d response: %s", call->desc->name, call->version,
                     rd.error);
        }
    }
    call->done(&r, call->ctx);
    result_release(&r);
    call_free(call);
}

struct net_client_kept {
    void *response;
    uint8_t *frame;
    struct kafka_arena arena;
};

struct net_client_kept *net_client_result_keep(struct net_client_result *result)
{
    struct net_client_kept *k = malloc(sizeof *k);
    if (!k)
        return NULL;
    k->response = result->response;
    k->frame = result->frame_;
    k->arena = result->arena_;
    result->frame_ = NULL;
    kafka_arena_init(&result->arena_);
    return k;
}

void *net_client_kept_response(const struct net_client_kept *k)
{
    return k->response;
}

void net_client_kept_free(struct net_client_kept *k)
{
    if (!k)
        return;
    kafka_arena_free(&k->arena);
    free(k->frame);
    free(k);
}

/* ---- nodes ---- */

struct client_node *client_find_node(struct net_client *c, int32_t id)
{
    for (struct client_node *n = c->nodes; n; n = n->next)
        if (n->id == id)
            return n;
    return NULL;
}

static struct client_node *node_new(struct net_client *c, int32_t id, const char *host, int port)
{
    struct client_node *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->client = c;
    n->id = id;
    snprintf(n->host, sizeof n->host, "%s", host);
    n->port = port;
    n->transport.ops = c->cfg.transport_ops ? c->cfg.transport_ops : &client_plain_transport;
    n->transport.ctx = c->cfg.transport_ctx;
    n->transport.fd = -1;
    n->next_correlation_id = 1;
    n->api_versions_sent = -1;
    n->stats.api_versions_version = -1;
    for (int i = 0; i < CLIENT_API_KEYS; i++)
        n->api_min[i] = n->api_max[i] = -1;
    return n;
}

/* Moves the nodes added since the last wake-up into c->nodes, under the
 * mutex so a stats query never misses one in between; returns, in the
 * order they were added, the ones that change a known node's address. */
static struct client_node *adopt_new_nodes_locked(struct net_client *c)
{
    LOCK_ASSERT_HELD(&c->mutex);
    struct client_node *added = NULL; /* new_nodes is newest first: reverse */
    while (c->new_nodes) {
        struct client_node *n = c->new_nodes;
        c->new_nodes = n->next;
        n->next = added;
        added = n;
    }
    struct client_node *changes = NULL, **tail = &changes;
    while (added) {
        struct client_node *n = added;
        added = n->next;
        n->next = NULL;
        if (client_find_node(c, n->id)) {
            *tail = n;
            tail = &n->next;
        } else {
            n->next = c->nodes;
            c->nodes = n;
        }
    }
    return changes;
}

/* A known node moved: the old connection goes, the backoff restarts. */
static void apply_address_change(struct net_client *c, struct client_node *update)
{
    struct client_node *n = client_find_node(c, update->id);
    if (strcmp(n->host, update->host) != 0 || n->port != update->port) {
        client_node_disconnect(n, NET_CLIENT_NETWORK_ERROR, false, "node address changed");
        memcpy(n->host, update->host, sizeof n->host);
        n->port = update->port;
        n->failures = 0;
        n->backoff_until_ms = 0;
    }
    free(update);
}

int net_client_add_node(struct net_client *c, int32_t node_id, const char *host, int port)
{
    if (!host || port <= 0 || port > 65535)
        return -1;
    struct client_node *n = node_new(c, node_id, host, port);
    if (!n)
        return -1;
    pthread_mutex_lock(&c->mutex);
    bool stopping = c->stopping;
    if (!stopping) {
        n->next = c->new_nodes;
        c->new_nodes = n;
    }
    pthread_mutex_unlock(&c->mutex);
    if (stopping) {
        free(n);
        return -1;
    }
    uv_async_send(&c->wakeup);
    return 0;
}

/* Under the mutex: a node the loop has, or one added but not yet applied
 * (so a caller can ask right after net_client_add_node). */
static const struct client_node *find_locked(const struct net_client *c, int32_t id)
{
    LOCK_ASSERT_HELD((pthread_mutex_t *)&c->mutex);
    for (const struct client_node *n = c->nodes; n; n = n->next)
        if (n->id == id)
            return n;
    for (const struct client_node *n = c->new_nodes; n; n = n->next)
        if (n->id == id)
            return n;
    return NULL;
}

int net_client_api_range(struct net_client *c, int32_t node_id, int16_t api_key, int16_t *min_version,
                         int16_t *max_version)
{
    int rc = -1;
    pthread_mutex_lock(&c->mutex);
    const struct client_node *n = find_locked(c, node_id);
    if (n && n->versions_known && api_key >= 0 && api_key < CLIENT_API_KEYS && n->api_max[api_key] >= 0) {
        *min_version = n->api_min[api_key];
        *max_version = n->api_max[api_key];
        rc = 0;
    }
    pthread_mutex_unlock(&c->mutex);
    return rc;
}

int net_client_node_stats(struct net_client *c, int32_t node_id, struct net_client_node_stats *out)
{
    pthread_mutex_lock(&c->mutex);
    const struct client_node *n = find_locked(c, node_id);
    if (n)
        *out = n->stats;
    pthread_mutex_unlock(&c->mutex);
    return n ? 0 : -1;
}

/* ---- submission ---- */

int net_client_send(struct net_client *c, const struct net_client_request *req, char *err, size_t errlen)
{
    const struct kafka_api_desc *desc = kafka_api_lookup(req->api_key);
    if (!desc) {
        snprintf(err, errlen, "unknown api key %d", req->api_key);
        return -1;
    }
    if (req->pinned_version >= 0 &&
        (req->pinned_version < desc->min_version || req->pinned_version > desc->max_version)) {
        snprintf(err, errlen, "%s v%d is outside the codecs' range v%d-v%d", desc->name, req->pinned_version,
                 desc->min_version, desc->max_version);
        return -1;
    }
    if (!req->done || (!req->body && !req->encode)) {
        snprintf(err, errlen, "a request needs a body (or encoder) and a callback");
        return -1;
    }
    struct client_call *call = calloc(1, sizeof *call);
    if (!call) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    call->node_id = req->node_id;
    call->api_key = req->api_key;
    call->pinned_version = req->pinned_version;
    call->version = -1;
    call->desc = desc;
    call->body = req->body;
    call->encode = req->encode;
    call->encode_ctx = req->encode_ctx;
    call->done = req->done;
    call->ctx = req->ctx;
    call->no_response = req->no_response || (req->api_key == PRODUCE_KEY && !req->encode &&
                                             ((const struct produce_request *)req->body)->acks == 0);
    call->fail_fast = req->fail_fast;
    int64_t timeout = req->timeout_ms > 0 ? req->timeout_ms : c->cfg.request_timeout_ms;
    call->deadline_ms = client_now_ms() + timeout;
    pthread_mutex_lock(&c->mutex);
    bool stopping = c->stopping;
    if (!stopping)
        client_list_push(&c->inbox, call);
    pthread_mutex_unlock(&c->mutex);
    if (stopping) {
        free(call);
        snprintf(err, errlen, "the client is being destroyed");
        return -1;
    }
    uv_async_send(&c->wakeup);
    return 0;
}

/* ---- the loop ---- */

static void on_handle_closed(uv_handle_t *h)
{
    (void)h;
}

static void shut_down(struct net_client *c)
{
    /* stopping is set, so the inbox can no longer grow. */
    pthread_mutex_lock(&c->mutex);
    struct client_call_list inbox = c->inbox;
    memset(&c->inbox, 0, sizeof c->inbox);
    struct client_node *pending = c->new_nodes;
    c->new_nodes = NULL;
    pthread_mutex_unlock(&c->mutex);
    while (pending) {
        struct client_node *next = pending->next;
        free(pending);
        pending = next;
    }
    for (struct client_call *call; (call = client_list_pop(&inbox));)
        client_call_finish(call, NET_CLIENT_CANCELLED, -1, "client destroyed");
    for (struct client_node *n = c->nodes; n; n = n->next)
        client_node_fail_all(n, NET_CLIENT_CANCELLED, "client destroyed");
    uv_close((uv_handle_t *)&c->wakeup, on_handle_closed);
    uv_close((uv_handle_t *)&c->timer, on_handle_closed);
}

static void route_call(struct net_client *c, struct client_call *call)
{
    struct client_node *n = client_find_node(c, call->node_id);
    if (!n) {
        client_call_finish(call, NET_CLIENT_UNKNOWN_NODE, -1, "no address for node %d", call->node_id);
        return;
    }
    /* A node that failed a moment ago is not tried before its backoff ends;
     * a fail_fast caller is told so now rather than then (as Kafka's
     * NetworkClient fails a send to a node it cannot connect to). */
    if (call->fail_fast && n->state == CLIENT_NODE_IDLE && n->failures > 0 && client_now_ms() < n->backoff_until_ms) {
        client_call_finish(call, NET_CLIENT_NETWORK_ERROR, -1, "node %d (%s:%d): in reconnect backoff after a failure",
                           n->id, n->host, n->port);
        return;
    }
    client_list_push(&n->waiting, call);
}

static void on_wakeup(uv_async_t *h)
{
    struct net_client *c = h->data;
    pthread_mutex_lock(&c->mutex);
    bool stopping = c->stopping;
    struct client_call_list inbox = c->inbox;
    struct client_node *changes = NULL;
    if (!stopping) {
        memset(&c->inbox, 0, sizeof c->inbox);
        /* Nodes first: a caller adds a node, then sends to it. */
        changes = adopt_new_nodes_locked(c);
    }
    pthread_mutex_unlock(&c->mutex);
    if (stopping) {
        shut_down(c);
        return;
    }
    while (changes) {
        struct client_node *next = changes->next;
        apply_address_change(c, changes);
        changes = next;
    }
    for (struct client_call *call; (call = client_list_pop(&inbox));)
        route_call(c, call);
    for (struct client_node *n = c->nodes; n; n = n->next)
        client_node_kick(n);
    client_rearm_timer(c);
}

static void on_timer(uv_timer_t *h)
{
    struct net_client *c = h->data;
    int64_t now = client_now_ms();
    for (struct client_node *n = c->nodes; n; n = n->next)
        client_node_tick(n, now);
    client_rearm_timer(c);
}

void client_rearm_timer(struct net_client *c)
{
    int64_t next = INT64_MAX;
    for (struct client_node *n = c->nodes; n; n = n->next) {
        int64_t d = client_node_next_deadline(n);
        if (d < next)
            next = d;
    }
    if (next == INT64_MAX) {
        uv_timer_stop(&c->timer);
        return;
    }
    int64_t delay = next - client_now_ms();
    uv_timer_start(&c->timer, on_timer, delay > 0 ? (uint64_t)delay : 0, 0);
}

static void *client_thread_main(void *arg)
{
    struct net_client *c = arg;
    uv_run(&c->loop, UV_RUN_DEFAULT);
    return NULL;
}

int net_client_create(const struct net_client_config *cfg, struct net_client **out, char *err, size_t errlen)
{
    if (cfg->max_in_flight < 1 || cfg->request_timeout_ms <= 0 || cfg->connection_setup_timeout_ms <= 0 ||
        cfg->reconnect_backoff_ms < 0 || cfg->reconnect_backoff_max_ms < cfg->reconnect_backoff_ms ||
        cfg->max_response_bytes < 8) {
        snprintf(err, errlen, "invalid client config");
        return -1;
    }
    struct net_client *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    c->cfg = *cfg;
    c->rng = (uint32_t)clock_mono_ns() | 1u;
    pthread_mutex_init(&c->mutex, NULL);
    int rc = uv_loop_init(&c->loop);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the client loop: %s", uv_strerror(rc));
    } else {
        uv_async_init(&c->loop, &c->wakeup, on_wakeup);
        uv_timer_init(&c->loop, &c->timer);
        c->wakeup.data = c;
        c->timer.data = c;
        if (pthread_create(&c->thread, NULL, client_thread_main, c) != 0) {
            snprintf(err, errlen, "cannot start the client thread");
            uv_close((uv_handle_t *)&c->wakeup, NULL);
            uv_close((uv_handle_t *)&c->timer, NULL);
            uv_run(&c->loop, UV_RUN_DEFAULT);
            uv_loop_close(&c->loop);
            rc = -1;
        }
    }
    if (rc != 0) {
        pthread_mutex_destroy(&c->mutex);
        free(c);
        return -1;
    }
    *out = c;
    return 0;
}

void net_client_destroy(struct net_client *c)
{
    if (!c)
        return;
    if (pthread_equal(pthread_self(), c->thread)) {
        /* Joining itself would deadlock; leaking is the lesser harm. */
        logger_error("net_client", "net_client_destroy called from a completion callback; ignored");
        return;
    }
    pthread_mutex_lock(&c->mutex);
    c->stopping = true;
    pthread_mutex_unlock(&c->mutex);
    uv_async_send(&c->wakeup);
    pthread_join(c->thread, NULL);
    uv_loop_close(&c->loop);
    while (c->nodes) {
        struct client_node *n = c->nodes;
        c->nodes = n->next;
        client_frame_reader_free(&n->reader);
        free(n);
    }
    pthread_mutex_destroy(&c->mutex);
    free(c);
}
