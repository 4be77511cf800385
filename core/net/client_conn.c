/* One node's connection in the outbound client: connect with backoff,
 * ApiVersions, SASL (client_sasl.c), pipelined writes, in-order responses, deadlines. Everything
 * here runs on the client's loop thread. */
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "net/client_internal.h"
#include "protocol/generated/api_versions_request.h"
#include "protocol/generated/api_versions_response.h"
#include "protocol/generated/errors.h"

#define API_VERSIONS_KEY 18
#define API_VERSIONS_FIRST_TRY 3
#define MAX_WRITE_IOV 64
#define MAX_READS_PER_EVENT 64

static void on_poll(uv_poll_t *handle, int status, int events);

static void free_handle(uv_handle_t *h)
{
    free(h);
}

static int32_t take_correlation_id(struct client_node *n)
{
    int32_t id = n->next_correlation_id;
    n->next_correlation_id = id == INT32_MAX ? 0 : id + 1;
    return id;
}

static bool has_unwritten(const struct client_node *n)
{
    for (const struct client_call *c = n->in_flight.head; c; c = c->next)
        if (c->written < c->frame.len)
            return true;
    return false;
}

static void update_poll(struct client_node *n)
{
    if (!n->poll)
        return;
    int want = UV_READABLE;
    if (n->state == CLIENT_NODE_CONNECTING)
        want = !n->transport.ops->wants_write || n->transport.ops->wants_write(&n->transport) ? UV_WRITABLE
                                                                                              : UV_READABLE;
    if (n->state != CLIENT_NODE_CONNECTING && has_unwritten(n))
        want |= UV_WRITABLE;
    if (want != n->poll_events) {
        uv_poll_start(n->poll, want, on_poll);
        n->poll_events = want;
    }
}

/* A host name lookup on libuv's threadpool, so DNS never blocks the loop. */
struct client_resolve {
    uv_getaddrinfo_t req; /* first: the callback casts back */
    struct client_node *node;
    uint64_t attempt;
};

static void close_socket(struct client_node *n)
{
    if (n->poll) {
        uv_close((uv_handle_t *)n->poll, free_handle);
        n->poll = NULL;
        n->poll_events = 0;
    }
    n->transport.ops->close(&n->transport);
}

void client_node_disconnect(struct client_node *n, enum net_client_status status, bool count_failure, const char *why)
{
    if (n->state == CLIENT_NODE_IDLE)
        return;
    bool was_ready = n->state == CLIENT_NODE_READY;
    close_socket(n);
    if (n->resolve) {
        /* Its callback still runs (cancelled or not) and sees it is stale. */
        uv_cancel((uv_req_t *)n->resolve);
        n->resolve = NULL;
    }
    if (n->addrs)
        freeaddrinfo(n->addrs);
    n->addrs = NULL;
    n->next_addr = NULL;
    client_frame_reader_free(&n->reader);
    client_sasl_end(n);
    n->session_end_ms = 0;
    n->state = CLIENT_NODE_IDLE;
    if (count_failure && !was_ready)
        snprintf(n->last_failure, sizeof n->last_failure, "%s", why);
    int64_t backoff = 0;
    if (count_failure) {
        n->failures++;
        backoff = client_backoff_ms(n->client->cfg.reconnect_backoff_ms, n->client->cfg.reconnect_backoff_max_ms,
                                    n->failures, client_jitter_unit(n->client));
        n->backoff_until_ms = client_now_ms() + backoff;
    }
    pthread_mutex_lock(&n->client->mutex);
    n->stats.ready = false;
    if (!was_ready && count_failure)
        n->stats.connect_failures++;
    if (count_failure)
        n->stats.last_backoff_ms = backoff;
    pthread_mutex_unlock(&n->client->mutex);
    /* The node is consistent before any callback runs. */
    for (struct client_call *call; (call = client_list_pop(&n->in_flight));)
        client_call_finish(call, status, call->version, "node %d (%s:%d): %s", n->id, n->host, n->port, why);
    if (!count_failure)
        return;
    /* Callers that asked not to wait for the next attempt. */
    struct client_call_list keep = {NULL, NULL, 0};
    for (struct client_call *call; (call = client_list_pop(&n->waiting));) {
        if (call->fail_fast)
            client_call_finish(call, status, -1, "node %d (%s:%d): %s", n->id, n->host, n->port, why);
        else
            client_list_push(&keep, call);
    }
    n->waiting = keep;
}

void client_node_failed(struct client_node *n, const char *fmt, ...)
{
    char why[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    client_node_disconnect(n, NET_CLIENT_NETWORK_ERROR, true, why);
}

void client_node_fail_all(struct client_node *n, enum net_client_status status, const char *why)
{
    client_node_disconnect(n, status, false, why);
    for (struct client_call *call; (call = client_list_pop(&n->waiting));)
        client_call_finish(call, status, -1, "%s", why);
}

/* ---- writing ---- */

/* Requests the broker never answers are done once written; they leave the
 * in-flight list wherever they stand, so responses still match its head. */
static void complete_unanswered(struct client_node *n)
{
    struct client_call_list keep = {0}, done = {0};
    for (struct client_call *call; (call = client_list_pop(&n->in_flight));)
        client_list_push(call->no_response && call->written == call->frame.len ? &done : &keep, call);
    n->in_flight = keep;
    for (struct client_call *call; (call = client_list_pop(&done));)
        client_call_finish(call, NET_CLIENT_OK, call->version, NULL);
}

static void flush(struct client_node *n)
{
    while (n->state != CLIENT_NODE_IDLE) {
        struct iovec iov[MAX_WRITE_IOV];
        int cnt = 0;
        for (struct client_call *c = n->in_flight.head; c && cnt < MAX_WRITE_IOV; c = c->next) {
            if (c->written == c->frame.len)
                continue;
            iov[cnt].iov_base = c->frame.buf + c->written;
            iov[cnt].iov_len = c->frame.len - c->written;
            cnt++;
        }
        if (cnt == 0)
            break;
        ssize_t w = n->transport.ops->writev(&n->transport, iov, cnt);
        if (w == -EAGAIN)
            break;
        if (w < 0) {
            client_node_failed(n, "write failed: %s", strerror((int)-w));
            return;
        }
        size_t left = (size_t)w;
        for (struct client_call *c = n->in_flight.head; c && left > 0; c = c->next) {
            size_t pending = c->frame.len - c->written;
            size_t step = pending < left ? pending : left;
            c->written += step;
            left -= step;
        }
        complete_unanswered(n);
    }
    update_poll(n);
}

/* Encodes call at version and queues it behind the calls in flight. */
static int put_in_flight(struct client_node *n, struct client_call *call, int16_t version)
{
    call->version = version;
    call->correlation_id = take_correlation_id(n);
    client_body_encode_fn enc = call->encode;
    const void *body = call->encode ? call->encode_ctx : call->body;
    if (client_frame_encode_request(&call->frame, call->desc, version, call->correlation_id, n->client->cfg.client_id,
                                    enc, body) != 0)
        return -1;
    call->written = 0;
    client_list_push(&n->in_flight, call);
    if (n->in_flight.count > n->stats.peak_in_flight) { /* rare: lock only then */
        pthread_mutex_lock(&n->client->mutex);
        n->stats.peak_in_flight = n->in_flight.count;
        pthread_mutex_unlock(&n->client->mutex);
    }
    return 0;
}

int client_node_send_internal(struct client_node *n, int16_t api_key, int16_t version, const void *body)
{
    struct client_call *call = calloc(1, sizeof *call);
    if (!call) {
        client_node_failed(n, "out of memory");
        return -1;
    }
    call->node_id = n->id;
    call->api_key = api_key;
    call->desc = kafka_api_lookup(api_key);
    call->internal = true;
    call->deadline_ms = n->setup_deadline_ms;
    call->body = body; /* encoded right away, so a stack struct will do */
    if (!call->desc || put_in_flight(n, call, version) != 0) {
        free(call);
        client_node_failed(n, "cannot encode the request of API key %d v%d", api_key, version);
        return -1;
    }
    flush(n);
    return 0;
}

static void send_api_versions(struct client_node *n, int16_t version)
{
    struct api_versions_request req;
    api_versions_request_init(&req);
    req.client_software_name = kafka_str_from_cstr(n->client->cfg.software_name);
    req.client_software_version = kafka_str_from_cstr(n->client->cfg.software_version);
    n->api_versions_sent = version;
    n->state = CLIENT_NODE_NEGOTIATING;
    client_node_send_internal(n, API_VERSIONS_KEY, version, &req);
}

/* ---- connecting ---- */

/* Connects to the next address of this attempt (Kafka's use_all_dns_ips):
 * a refused address moves on to the next one within the same setup
 * deadline; only the last failure counts for backoff. */
static void try_next_address(struct client_node *n, int last_error)
{
    while (n->next_addr) {
        const struct addrinfo *a = n->next_addr;
        n->next_addr = a->ai_next;
        int rc = n->transport.ops->connect(&n->transport, a->ai_addr, a->ai_addrlen);
        if (rc != 0) {
            last_error = -rc;
            continue;
        }
        n->poll = malloc(sizeof *n->poll);
        if (!n->poll || uv_poll_init(&n->client->loop, n->poll, n->transport.fd) != 0) {
            free(n->poll);
            n->poll = NULL;
            client_node_failed(n, "cannot poll the socket");
            return;
        }
        n->poll->data = n;
        n->poll_events = 0;
        update_poll(n);
        return;
    }
    client_node_failed(n, "connect failed: %s", strerror(last_error));
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *ai)
{
    struct client_resolve *r = (struct client_resolve *)req;
    struct client_node *n = r->node;
    bool current = n->resolve == r && n->attempt == r->attempt;
    free(r);
    if (!current) {
        if (ai)
            uv_freeaddrinfo(ai);
        return;
    }
    n->resolve = NULL;
    if (status != 0 || !ai) {
        client_node_failed(n, "cannot resolve %s: %s", n->host, uv_strerror(status ? status : UV_EAI_NONAME));
    } else {
        n->addrs = ai;
        n->next_addr = ai;
        try_next_address(n, ECONNREFUSED);
    }
    client_rearm_timer(n->client);
}

static void start_connect(struct client_node *n)
{
    struct net_client *c = n->client;
    pthread_mutex_lock(&c->mutex);
    n->stats.connect_attempts++;
    pthread_mutex_unlock(&c->mutex);
    n->state = CLIENT_NODE_CONNECTING;
    n->attempt++;
    n->setup_deadline_ms = client_now_ms() + c->cfg.connection_setup_timeout_ms;
    client_frame_reader_init(&n->reader, c->cfg.max_response_bytes);
    n->transport.host = n->host;
    n->transport.port = n->port;
    n->transport.error[0] = '\0';

    char port[16];
    snprintf(port, sizeof port, "%d", n->port);
    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | AI_NUMERICHOST;
    /* An address literal resolves at once, without touching DNS. */
    if (getaddrinfo(n->host, port, &hints, &ai) == 0 && ai) {
        n->addrs = ai;
        n->next_addr = ai;
        try_next_address(n, ECONNREFUSED);
        return;
    }
    struct client_resolve *r = calloc(1, sizeof *r);
    if (!r) {
        client_node_failed(n, "out of memory");
        return;
    }
    r->node = n;
    r->attempt = n->attempt;
    hints.ai_flags = AI_NUMERICSERV;
    int rc = uv_getaddrinfo(&c->loop, &r->req, on_resolved, n->host, port, &hints);
    if (rc != 0) {
        free(r);
        client_node_failed(n, "cannot resolve %s: %s", n->host, uv_strerror(rc));
        return;
    }
    n->resolve = r;
}

static void finish_connect(struct client_node *n)
{
    int rc = n->transport.ops->finish_connect(&n->transport);
    if (rc == -EAGAIN) {
        update_poll(n); /* a handshake may wait for the other direction */
        return;
    }
    if (rc != 0 && n->transport.error[0]) {
        /* The peer answered and refused (e.g. a certificate): another
         * address of the same host would say the same. */
        n->next_addr = NULL;
        client_node_failed(n, "%s", n->transport.error);
        return;
    }
    if (rc != 0) {
        close_socket(n);
        try_next_address(n, -rc);
        return;
    }
    n->transport.failures = 0;
    send_api_versions(n, API_VERSIONS_FIRST_TRY);
}

/* ---- reading ---- */

static int16_t listed_max(const struct api_versions_response *r, int16_t key)
{
    for (int32_t i = 0; i < r->api_keys_count; i++)
        if (r->api_keys[i].api_key == key)
            return r->api_keys[i].max_version;
    return -1;
}

void client_node_ready(struct client_node *n)
{
    struct net_client *c = n->client;
    pthread_mutex_lock(&c->mutex);
    n->stats.connections++;
    n->stats.ready = true;
    n->stats.api_versions_version = n->api_versions_sent;
    pthread_mutex_unlock(&c->mutex);
    n->state = CLIENT_NODE_READY;
    n->failures = 0;
    n->last_failure[0] = '\0';
}

static void negotiated(struct client_node *n, const struct api_versions_response *r)
{
    struct net_client *c = n->client;
    pthread_mutex_lock(&c->mutex);
    for (int i = 0; i < CLIENT_API_KEYS; i++)
        n->api_min[i] = n->api_max[i] = -1;
    for (int32_t i = 0; i < r->api_keys_count; i++) {
        int16_t key = r->api_keys[i].api_key;
        if (key >= 0 && key < CLIENT_API_KEYS) {
            n->api_min[key] = r->api_keys[i].min_version;
            n->api_max[key] = r->api_keys[i].max_version;
        }
    }
    n->versions_known = true;
    pthread_mutex_unlock(&c->mutex);
    /* With SASL the connection is ready only once authenticated. */
    if (c->cfg.sasl_mechanism[0])
        client_sasl_start(n);
    else
        client_node_ready(n);
}

/* The ApiVersions answer on a new connection. A broker that does not know
 * the version we sent answers in the v0 layout, so decoding falls back to
 * v0 as Kafka's clients do. */
static void on_api_versions(struct client_node *n, int16_t sent, const uint8_t *body, size_t len)
{
    struct kafka_arena arena;
    kafka_arena_init(&arena);
    struct api_versions_response r;
    struct kafka_reader rd;
    kafka_reader_init(&rd, body, len);
    int rc = api_versions_response_decode(&r, &rd, sent, &arena);
    if (rc != 0 && sent != 0) {
        kafka_reader_init(&rd, body, len);
        rc = api_versions_response_decode(&r, &rd, 0, &arena);
    }
    if (rc != 0) {
        client_node_failed(n, "malformed ApiVersions v%d response: %s", sent, rd.error);
    } else if (r.error_code == KAFKA_ERR_UNSUPPORTED_VERSION &&
               client_api_versions_retry(sent, listed_max(&r, API_VERSIONS_KEY)) >= 0) {
        send_api_versions(n, client_api_versions_retry(sent, listed_max(&r, API_VERSIONS_KEY)));
    } else if (r.error_code != KAFKA_ERR_NONE) {
        client_node_failed(n, "ApiVersions v%d failed with error %d", sent, r.error_code);
    } else {
        negotiated(n, &r);
    }
    kafka_arena_free(&arena);
}

static void on_frame(struct client_node *n, uint8_t *frame, size_t len)
{
    struct client_call *call = n->in_flight.head;
    if (!call || call->written < call->frame.len) {
        free(frame);
        client_node_failed(n, "response with no request in flight");
        return;
    }
    char err[160];
    long body_at = client_frame_response_body(frame, len, call->api_key, call->version, call->correlation_id, err,
                                              sizeof err);
    if (body_at < 0) {
        free(frame);
        client_node_failed(n, "%s", err);
        return;
    }
    client_list_pop(&n->in_flight);
    if (call->internal) {
        int16_t sent = call->version, key = call->api_key;
        client_call_finish(call, NET_CLIENT_OK, sent, NULL);
        if (key == API_VERSIONS_KEY)
            on_api_versions(n, sent, frame + body_at, len - (size_t)body_at);
        else
            client_sasl_on_response(n, key, sent, frame + body_at, len - (size_t)body_at);
        free(frame);
        return;
    }
    client_call_deliver(call, frame, len, body_at);
}

static void read_frames(struct client_node *n)
{
    /* Past the fairness bound, go on only while the transport holds bytes
     * no readiness event would announce again. */
    for (int i = 0;
         n->state != CLIENT_NODE_IDLE &&
         (i < MAX_READS_PER_EVENT || (n->transport.ops->pending && n->transport.ops->pending(&n->transport)));
         i++) {
        size_t room;
        uint8_t *dst = client_frame_reader_space(&n->reader, &room);
        ssize_t got = n->transport.ops->read(&n->transport, dst, room);
        if (got == -EAGAIN)
            return;
        if (got <= 0) {
            const char *why = got == 0 ? "connection closed by the peer" : strerror((int)-got);
            client_node_failed(n, "%s", got < 0 && n->transport.error[0] ? n->transport.error : why);
            return;
        }
        char err[160];
        int rc = client_frame_reader_advance(&n->reader, (size_t)got, err, sizeof err);
        if (rc < 0) {
            client_node_failed(n, "%s", err);
            return;
        }
        if (rc == 1) {
            size_t len;
            uint8_t *frame = client_frame_reader_take(&n->reader, &len);
            on_frame(n, frame, len);
        }
    }
}

static void on_poll(uv_poll_t *handle, int status, int events)
{
    struct client_node *n = handle->data;
    if (status < 0) {
        /* libuv reports a socket's error condition (POLLERR) as UV_EBADF;
         * the cause (a refused connect, a reset) is in SO_ERROR. */
        int soerr = 0;
        socklen_t len = sizeof soerr;
        if (n->transport.fd >= 0 && getsockopt(n->transport.fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 && soerr != 0)
            client_node_failed(n, "socket error: %s", strerror(soerr));
        else
            client_node_failed(n, "socket error: %s", uv_strerror(status));
    } else if (n->state == CLIENT_NODE_CONNECTING) {
        if (events & (UV_WRITABLE | UV_READABLE | UV_DISCONNECT))
            finish_connect(n);
    } else {
        if (events & (UV_READABLE | UV_DISCONNECT))
            read_frames(n);
        if (n->state != CLIENT_NODE_IDLE && (events & UV_WRITABLE))
            flush(n);
    }
    client_node_kick(n);
    client_rearm_timer(n->client);
}

/* ---- scheduling ---- */

static bool in_setup(const struct client_node *n)
{
    return n->state == CLIENT_NODE_CONNECTING || n->state == CLIENT_NODE_NEGOTIATING ||
           n->state == CLIENT_NODE_AUTHENTICATING;
}

void client_node_kick(struct client_node *n)
{
    /* A broker closes a SASL session past its lifetime at the next
     * request; re-authenticating is a new connection, made between
     * requests, so no call is lost. */
    if (n->state == CLIENT_NODE_READY && n->session_end_ms > 0 && n->in_flight.count == 0 &&
        client_now_ms() >= n->session_end_ms)
        client_node_disconnect(n, NET_CLIENT_NETWORK_ERROR, false, "SASL session lifetime nearly over");
    if (n->state == CLIENT_NODE_IDLE) {
        if (n->waiting.count > 0 && client_now_ms() >= n->backoff_until_ms)
            start_connect(n);
        return;
    }
    if (n->state != CLIENT_NODE_READY)
        return;
    bool queued = false;
    while (n->waiting.head && n->in_flight.count < n->client->cfg.max_in_flight) {
        struct client_call *call = client_list_pop(&n->waiting);
        int16_t key = call->api_key;
        int16_t version = key < CLIENT_API_KEYS && n->api_max[key] >= 0
                              ? client_pick_version(call->desc, n->api_min[key], n->api_max[key], call->pinned_version)
                              : -1;
        if (version < 0) {
            client_call_finish(call, NET_CLIENT_UNSUPPORTED_VERSION, -1, "node %d does not serve %s%s", n->id,
                               call->desc->name, call->pinned_version >= 0 ? " at the pinned version" : "");
            continue;
        }
        if (put_in_flight(n, call, version) != 0) {
            client_call_finish(call, NET_CLIENT_ENCODE_FAILED, version, "cannot encode %s v%d", call->desc->name,
                               version);
            continue;
        }
        queued = true;
    }
    if (queued)
        flush(n);
}

/* Fails the calls in list whose deadline passed; returns how many. */
static int expire(struct client_call_list *list, int64_t now, struct client_call_list *out)
{
    struct client_call_list keep = {0};
    int expired = 0;
    for (struct client_call *call; (call = client_list_pop(list));) {
        if (!call->internal && call->deadline_ms <= now) {
            client_list_push(out, call);
            expired++;
        } else {
            client_list_push(&keep, call);
        }
    }
    *list = keep;
    return expired;
}

void client_node_tick(struct client_node *n, int64_t now)
{
    if (in_setup(n) && now >= n->setup_deadline_ms)
        client_node_failed(n, "connection setup timed out after %lld ms",
                           (long long)n->client->cfg.connection_setup_timeout_ms);
    struct client_call_list timed_out = {0};
    expire(&n->waiting, now, &timed_out);
    /* An in-flight request that times out takes its connection down, as in
     * Kafka's NetworkClient: responses come in order, so the others behind
     * it cannot be answered before it. */
    bool lost_in_flight = expire(&n->in_flight, now, &timed_out) > 0;
    for (struct client_call *call; (call = client_list_pop(&timed_out));)
        client_call_finish(call, NET_CLIENT_TIMED_OUT, call->version, "%s to node %d timed out%s%s", call->desc->name,
                           n->id, n->last_failure[0] ? "; its last connection attempt failed: " : "", n->last_failure);
    if (lost_in_flight)
        client_node_failed(n, "disconnected after a request timed out");
    client_node_kick(n);
}

int64_t client_node_next_deadline(const struct client_node *n)
{
    int64_t next = INT64_MAX;
    if (in_setup(n))
        next = n->setup_deadline_ms;
    if (n->state == CLIENT_NODE_IDLE && n->waiting.count > 0 && n->backoff_until_ms < next)
        next = n->backoff_until_ms;
    const struct client_call_list *lists[2] = {&n->waiting, &n->in_flight};
    for (int i = 0; i < 2; i++)
        for (const struct client_call *c = lists[i]->head; c; c = c->next)
            if (!c->internal && c->deadline_ms < next)
                next = c->deadline_ms;
    return next;
}
