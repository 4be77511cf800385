/* One client connection on its loop: reading and framing requests,
 * muting while a request is in flight, and closing. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/net_internal.h"
#include "util/clock.h"
#include "util/logger.h"

static void conn_on_poll(uv_poll_t *handle, int status, int events);
static void conn_on_throttle_end(uv_timer_t *timer);

struct net_connection *net_connection_open(struct net_loop *loop, const struct net_accepted *a)
{
    struct net_server *server = loop->server;
    int fd = a->fd;
    const struct net_listener_config *lc = &server->cfg.listeners[a->listener_index];
    struct net_connection *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->transport = (struct net_transport){&net_plain_transport_ops, NULL, fd};
    if (lc->transport_init && lc->transport_init(lc->transport_ctx, &c->transport) != 0) {
        logger_warn(NET_LOG, "listener %s refused a connection: its transport did not start", lc->name);
        free(c);
        return NULL;
    }
    c->in_buf = malloc(NET_INPUT_BUFFER_BYTES);
    if (!c->in_buf || uv_poll_init_socket(&loop->uv, &c->poll, fd) != 0) {
        logger_warn(NET_LOG, "cannot set up a new connection on network thread %d", loop->index);
        net_transport_release(c->transport.ops, c->transport.state, fd);
        free(c->in_buf);
        free(c);
        return NULL;
    }
    uv_timer_init(&loop->uv, &c->throttle_timer);
    c->poll.data = c;
    c->throttle_timer.data = c;
    c->handles_open = 2;
    c->loop = loop;
    c->fd = fd;
    c->ip = a->ip;
    c->ip_counted = a->ip_counted;
    c->id = atomic_fetch_add(&server->next_connection_id, 1) + 1;
    c->listener_name = lc->name;
    c->security_protocol = lc->security_protocol;
    snprintf(c->principal_type, sizeof c->principal_type, "User");
    snprintf(c->principal_name, sizeof c->principal_name, "ANONYMOUS");
    net_format_peer(fd, c->peer, sizeof(c->peer));
    c->last_activity_ms = clock_mono_ms();

    c->next = loop->conns;
    if (loop->conns)
        loop->conns->prev = c;
    loop->conns = c;
    loop->open_conn_count++;

    logger_debug(NET_LOG, "connection %" PRIu64 " opened from %s on %s", c->id, c->peer, c->listener_name);
    net_connection_update_poll(c);
    return c;
}

void net_connection_update_poll(struct net_connection *c)
{
    struct net_loop *loop = c->loop;
    int want = 0;
    if (!c->closed) {
        if (c->out_active)
            want = c->out_held ? 0 : UV_WRITABLE;
        else if (!c->in_flight && !c->order_hold && c->parked_count < NET_MAX_PARKED_REQUESTS && !c->throttled &&
                 loop->phase == NET_LOOP_RUNNING && !loop->backpressured &&
                 (c->reading || !net_server_memory_full(loop->server)))
            want = UV_READABLE; /* a request begun is read to its end; a new one waits for memory */
        else if (c->in_flight || c->parked_head)
            want = UV_DISCONNECT; /* a peer gone while its request waits cancels it */
        if (want == UV_READABLE && c->transport.ops->wants_write && c->transport.ops->wants_write(&c->transport))
            want |= UV_WRITABLE;
    }
    if (want == c->poll_events)
        return;
    /* Reading (again) after the broker stopped: a request begun earlier gets
     * its whole time bound from now, as the pause was not the peer's doing. */
    if ((want & UV_READABLE) && !(c->poll_events & UV_READABLE) && c->request_started_ms != 0)
        c->request_started_ms = clock_mono_ms();
    c->poll_events = want;
    if (want == 0)
        uv_poll_stop(&c->poll);
    else
        uv_poll_start(&c->poll, want, conn_on_poll);
}

static void conn_on_handle_closed(uv_handle_t *handle)
{
    struct net_connection *c = handle->data;
    if (handle == (uv_handle_t *)&c->poll) {
        /* Closed only now: libuv must not be polling an fd that is gone. */
        close(c->fd);
        c->fd = -1;
    }
    c->handles_open--;
    net_connection_free_if_done(c);
}

void net_connection_free_if_done(struct net_connection *c)
{
    if (!c->closed || c->handles_open > 0 || c->in_flight || c->parked_head)
        return;
    struct net_loop *loop = c->loop;
    if (c->prev)
        c->prev->next = c->next;
    else
        loop->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    if (c->auth_state && c->auth_state_free)
        c->auth_state_free(c->auth_state);
    free(c->in_buf);
    free(c);
}

void net_connection_close(struct net_connection *c, const char *why)
{
    if (c->closed)
        return;
    c->closed = true;
    c->poll_events = 0;
    struct net_loop *loop = c->loop;
    loop->open_conn_count--;
    net_conn_limits_release_counted(&loop->server->limits, &c->ip, c->ip_counted);
    logger_debug(NET_LOG, "connection %" PRIu64 " from %s closed: %s", c->id, c->peer, why);

    if (c->waiting_dispatch) {
        /* Never reached an io thread, so nobody else will complete it. */
        net_loop_unlink_blocked(loop, c);
        c->waiting_dispatch = false;
        net_request_free(c->in_flight);
        c->in_flight = NULL;
        net_server_request_done(loop->server);
    } else if (c->in_flight) {
        /* The handler has it: tell a parked request to give up now. */
        net_request_cancel(c->in_flight);
    }
    /* Parked requests already answered are dropped; the others give up
     * and are freed as they complete. */
    struct net_request_impl **link = &c->parked_head;
    c->parked_tail = NULL;
    while (*link) {
        struct net_request_impl *r = *link;
        if (r->parked_done) {
            *link = r->parked_next;
            c->parked_count--;
            net_request_free(r);
        } else {
            net_request_cancel(r);
            c->parked_tail = r;
            link = &r->parked_next;
        }
    }
    if (c->reading) {
        net_request_free(c->reading);
        c->reading = NULL;
    }
    net_connection_drop_response(c);
    /* While the socket is still open, so a transport may say goodbye. */
    net_transport_release(c->transport.ops, c->transport.state, c->fd);
    c->transport.ops = &net_plain_transport_ops;
    c->transport.state = NULL;
    net_transport_release(c->next_transport_ops, c->next_transport_state, c->fd);
    c->next_transport_ops = NULL;
    c->next_transport_state = NULL;
    uv_timer_stop(&c->throttle_timer);
    uv_close((uv_handle_t *)&c->throttle_timer, conn_on_handle_closed);
    uv_close((uv_handle_t *)&c->poll, conn_on_handle_closed);
    net_loop_connection_closed(loop);
}

bool net_session_expired_for(int64_t expiry_ms, int64_t now_ms, const uint8_t *frame, size_t frame_len)
{
    if (expiry_ms <= 0 || now_ms < expiry_ms)
        return false;
    if (frame_len < 2)
        return true;
    int api_key = (int16_t)(((uint16_t)frame[0] << 8) | frame[1]);
    return api_key != NET_API_SASL_HANDSHAKE && api_key != NET_API_SASL_AUTHENTICATE;
}

/* Returns -1 if the connection was closed instead of dispatching. */
static int conn_frame_complete(struct net_connection *c, struct net_request_impl *req)
{
    if (c->session_expiry_ms > 0 &&
        net_session_expired_for(c->session_expiry_ms, clock_mono_ms(), req->pub.frame, req->pub.frame_len)) {
        net_request_free(req);
        logger_info(NET_LOG, "closing connection %" PRIu64 " from %s (%s:%s): its session expired", c->id, c->peer,
                    c->principal_type, c->principal_name);
        net_connection_close(c, "session expired");
        return -1;
    }
    req->pub.received_mono_ns = clock_mono_ns();
    c->request_started_ms = 0;
    c->in_flight = req;
    net_loop_dispatch(c->loop, c);
    return 0;
}

/* Looks at buffered input for the next frame. Returns -1 if the connection
 * was closed. */
static int conn_parse(struct net_connection *c)
{
    size_t avail = c->in_end - c->in_start;
    if (avail < 4) {
        if (c->in_start > 0) {
            memmove(c->in_buf, c->in_buf + c->in_start, avail);
            c->in_start = 0;
            c->in_end = avail;
        }
        return 0;
    }
    const uint8_t *p = c->in_buf + c->in_start;
    int64_t size = (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3]);
    int64_t max = c->loop->server->cfg.socket_request_max_bytes;
    /* On SASL listeners an empty frame is valid, as in Kafka: a bare token
     * after SaslHandshake v0 may be empty (GSSAPI's second client token);
     * the dispatcher closes an empty frame that should have been a request. */
    bool sasl = c->security_protocol == NET_SECURITY_SASL_PLAINTEXT || c->security_protocol == NET_SECURITY_SASL_SSL;
    int64_t min = sasl ? 0 : 1;
    /* Before authenticating, anyone may connect: Kafka's
     * sasl.server.max.receive.size bounds every frame until then (requests
     * and bare tokens alike), so an unknown peer cannot make the broker
     * hold up to socket.request.max.bytes per connection. Checked on the
     * size prefix alone, before anything is allocated for the frame. */
    int64_t sasl_max = c->loop->server->cfg.sasl_server_max_receive_size;
    if (sasl && !c->authenticated && size > sasl_max) {
        logger_warn(NET_LOG,
                    "closing connection %" PRIu64 " from %s on %s: frame of %" PRId64
                    " bytes before SASL authentication exceeds sasl.server.max.receive.size=%" PRId64,
                    c->id, c->peer, c->listener_name, size, sasl_max);
        net_auth_refusal_fn hook = c->loop->server->cfg.on_auth_refusal;
        if (hook) {
            /* Kafka's authenticator fails the authentication here: say so
             * (on the stack: nothing is allocated for the frame). */
            char reason[160];
            snprintf(reason, sizeof reason,
                     "frame of %" PRId64
                     " bytes before SASL authentication exceeds sasl.server.max.receive.size=%" PRId64,
                     size, sasl_max);
            struct net_auth_refusal refusal = {.connection_id = c->id,
                                               .peer = c->peer,
                                               .listener_name = c->listener_name,
                                               .security_protocol = c->security_protocol,
                                               .principal_type = c->principal_type,
                                               .principal_name = c->principal_name,
                                               .auth_state = c->auth_state,
                                               .reason = reason};
            hook(c->loop->server->cfg.auth_refusal_ctx, &refusal);
        }
        net_connection_close(c, "unauthenticated frame too large");
        return -1;
    }
    if (size < min || size > max) {
        logger_warn(NET_LOG,
                    "closing connection %" PRIu64 " from %s: request size %" PRId64 " is outside %" PRId64 "..%" PRId64
                    " (socket.request.max.bytes)",
                    c->id, c->peer, size, min, max);
        net_connection_close(c, "invalid request size");
        return -1;
    }
    size_t frame_len = (size_t)size;
    size_t have = avail - 4;
    if (c->parked_head) {
        /* Past parked requests only a Produce goes ahead of their answers. */
        if (have < 2)
            return 0;
        int api_key = (int16_t)(((uint16_t)p[4] << 8) | p[5]);
        if (api_key != NET_API_PRODUCE) {
            c->order_hold = true;
            net_connection_update_poll(c);
            return 0;
        }
    }
    if (have >= frame_len) {
        struct net_request_impl *req = net_request_new(c, frame_len, frame_len);
        if (!req) {
            logger_warn(NET_LOG, "closing connection %" PRIu64 " from %s: out of memory", c->id, c->peer);
            net_connection_close(c, "out of memory");
            return -1;
        }
        memcpy(req->pub.frame, p + 4, frame_len);
        c->in_start += 4 + frame_len;
        if (c->in_start == c->in_end)
            c->in_start = c->in_end = 0;
        return conn_frame_complete(c, req);
    }
    /* A frame larger than the input buffer is counted in full against
     * queued.max.request.bytes once it has its own buffer; until the peer
     * has sent an input buffer's worth of it, its bytes wait here, counted
     * nowhere, like a small frame's. A peer announcing a big frame and
     * trickling it holds none of the memory the other clients need. */
    if (4 + frame_len <= NET_INPUT_BUFFER_BYTES || avail < NET_INPUT_BUFFER_BYTES) {
        if (c->in_start > 0) {
            memmove(c->in_buf, p, avail);
            c->in_start = 0;
            c->in_end = avail;
        }
        return 0;
    }
    /* Large frame: continue in its own buffer, grown as bytes arrive. */
    struct net_request_impl *req = net_request_new(c, frame_len, have);
    if (!req) {
        logger_warn(NET_LOG, "closing connection %" PRIu64 " from %s: out of memory", c->id, c->peer);
        net_connection_close(c, "out of memory");
        return -1;
    }
    memcpy(req->pub.frame, p + 4, have);
    c->reading = req;
    c->reading_got = have;
    c->in_start = c->in_end = 0;
    return 0;
}

/* A transport that learned who the peer is (a verified TLS client
 * certificate) says so once; the connection acts as that principal. */
static void conn_adopt_peer_principal(struct net_connection *c)
{
    if (!c->transport.ops->peer_principal)
        return;
    char type[NET_PRINCIPAL_TYPE_MAX], name[NET_PRINCIPAL_NAME_MAX];
    if (c->transport.ops->peer_principal(&c->transport, type, sizeof type, name, sizeof name) != 1)
        return;
    memcpy(c->principal_type, type, sizeof type);
    memcpy(c->principal_name, name, sizeof name);
    logger_debug(NET_LOG, "connection %" PRIu64 " from %s acts as %s:%s (%s)", c->id, c->peer, type, name,
                 c->transport.ops->name);
}

/* Returns bytes read, 0 when nothing is available now, -1 if closed. */
static ssize_t conn_recv(struct net_connection *c, void *buf, size_t len)
{
    for (;;) {
        ssize_t n = c->transport.ops->recv(&c->transport, buf, len);
        if (n > 0) {
            c->last_activity_ms = clock_mono_ms();
            if (c->request_started_ms == 0)
                c->request_started_ms = c->last_activity_ms;
            conn_adopt_peer_principal(c);
            return n;
        }
        if (n == 0) {
            net_connection_close(c, (c->reading || c->in_end > c->in_start) ? "peer closed in the middle of a request"
                                                                            : "peer closed");
            return -1;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        if (errno == ECONNRESET || errno == ETIMEDOUT) {
            net_connection_close(c, "connection reset by peer");
        } else {
            logger_warn(NET_LOG, "read from connection %" PRIu64 " (%s): %s", c->id, c->peer, strerror(errno));
            net_connection_close(c, "read error");
        }
        return -1;
    }
}

static void conn_read(struct net_connection *c)
{
    size_t budget = NET_READ_BUDGET_BYTES;
    while (!c->closed && !c->in_flight && !c->order_hold && c->parked_count < NET_MAX_PARKED_REQUESTS && budget > 0) {
        ssize_t n;
        if (c->reading) {
            struct net_request_impl *req = c->reading;
            /* A kept buffer may be larger than the frame: read no further
             * than the frame's end, the next frame's bytes are not ours. */
            size_t end = req->frame_cap < req->pub.frame_len ? req->frame_cap : req->pub.frame_len;
            if (c->reading_got == end) {
                size_t cap = req->frame_cap;
                uint8_t *grown = req->frame_pooled ? net_frame_pool_grow(req->pub.frame, &cap, req->pub.frame_len)
                                                   : NULL;
                if (!grown) {
                    logger_warn(NET_LOG, "closing connection %" PRIu64 " from %s: out of memory", c->id, c->peer);
                    net_connection_close(c, "out of memory");
                    return;
                }
                req->pub.frame = grown;
                req->frame_cap = cap;
                end = cap < req->pub.frame_len ? cap : req->pub.frame_len;
            }
            n = conn_recv(c, req->pub.frame + c->reading_got, end - c->reading_got);
            if (n <= 0)
                break;
            c->reading_got += (size_t)n;
            if (c->reading_got == req->pub.frame_len) {
                c->reading = NULL;
                if (req->frame_pooled)
                    net_frame_pool_fence(req->pub.frame, req->frame_cap, req->pub.frame_len);
                if (conn_frame_complete(c, req) < 0)
                    return;
            }
        } else {
            if (net_server_memory_full(c->loop->server))
                break; /* queued.max.request.bytes: the poll update below mutes it */
            if (c->in_end == NET_INPUT_BUFFER_BYTES) {
                /* conn_parse always leaves room; never read with a zero length,
                 * which would look like the peer closing. */
                logger_warn(NET_LOG, "connection %" PRIu64 " (%s): input buffer stuck full", c->id, c->peer);
                net_connection_close(c, "input buffer full");
                return;
            }
            n = conn_recv(c, c->in_buf + c->in_end, NET_INPUT_BUFFER_BYTES - c->in_end);
            if (n <= 0)
                break;
            c->in_end += (size_t)n;
            if (conn_parse(c) < 0)
                return;
        }
        budget -= (size_t)n < budget ? (size_t)n : budget;
    }
    /* Out of budget with bytes held inside the transport: the socket will
     * not announce them, so come back on the next loop turn (the throttle
     * timer is idle while the connection reads). */
    if (!c->closed && budget == 0 && !c->in_flight && c->transport.ops->pending &&
        c->transport.ops->pending(&c->transport) > 0)
        uv_timer_start(&c->throttle_timer, conn_on_throttle_end, 0, 0);
    net_connection_update_poll(c);
}

static void conn_write_and_continue(struct net_connection *c)
{
    int rc = net_connection_write(c);
    if (rc < 0) {
        net_connection_close(c, "write failed");
        return;
    }
    if (rc > 0) {
        net_connection_update_poll(c);
        return;
    }
    net_connection_drop_response(c);
    if (c->close_after_write) {
        net_connection_close(c, "closed after its last response");
        return;
    }
    net_connection_resume(c);
}

static void conn_on_poll(uv_poll_t *handle, int status, int events)
{
    struct net_connection *c = handle->data;
    if (c->closed)
        return;
    if (status < 0) {
        /* libuv reports a socket error condition (POLLERR) as UV_EBADF; the
         * real cause is in SO_ERROR, usually a reset from the peer. */
        int soerr = 0;
        socklen_t len = sizeof(soerr);
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
        if (soerr == 0 || soerr == ECONNRESET || soerr == EPIPE || soerr == ETIMEDOUT) {
            net_connection_close(c, "connection reset by peer");
        } else {
            logger_warn(NET_LOG, "connection %" PRIu64 " (%s): socket error: %s", c->id, c->peer, strerror(soerr));
            net_connection_close(c, "socket error");
        }
        return;
    }
    /* While a request is in flight only UV_DISCONNECT is asked for; a
     * hang-up may also show as readable. Either way the peer is gone. */
    if ((events & (UV_DISCONNECT | UV_READABLE)) && !(c->poll_events & UV_READABLE) &&
        (c->in_flight || c->parked_head) && !c->out_active) {
        net_connection_close(c, "peer closed while its request was handled");
        return;
    }
    bool was_writing = c->out_active;
    if ((events & UV_WRITABLE) && was_writing)
        conn_write_and_continue(c);
    /* Writable with no response to write: the transport's recv waited for it. */
    if (!c->closed && ((events & UV_READABLE) || ((events & UV_WRITABLE) && !was_writing)))
        conn_read(c);
}

/* Installs the transport a completion asked for, now that the response
 * before it is written. Returns -1 if the connection was closed. */
static int conn_swap_transport(struct net_connection *c)
{
    const struct net_transport_ops *ops = c->next_transport_ops;
    void *state = c->next_transport_state;
    c->next_transport_ops = NULL;
    c->next_transport_state = NULL;
    if (c->reading || c->in_end > c->in_start) {
        /* Those bytes were read through the old transport but belong to
         * the new one: interpreting them either way is unsafe. */
        net_transport_release(ops, state, c->fd);
        logger_warn(NET_LOG,
                    "closing connection %" PRIu64 " from %s: bytes sent before its transport "
                    "changed",
                    c->id, c->peer);
        net_connection_close(c, "bytes pipelined across a transport change");
        return -1;
    }
    net_transport_release(c->transport.ops, c->transport.state, c->fd);
    c->transport.ops = ops;
    c->transport.state = state;
    logger_debug(NET_LOG, "connection %" PRIu64 " from %s now uses transport %s", c->id, c->peer,
                 ops->name ? ops->name : "?");
    return 0;
}

static void conn_finish(struct net_connection *c, struct net_request_impl *req);

/* The oldest parked request, once complete, is answered when nothing else
 * is being written. Returns true when it took over (it resumes after). */
static bool conn_answer_parked(struct net_connection *c)
{
    struct net_request_impl *head = c->parked_head;
    if (c->out_active || !head || !head->parked_done)
        return false;
    c->parked_head = head->parked_next;
    if (!c->parked_head)
        c->parked_tail = NULL;
    c->parked_count--;
    head->parked = false;
    conn_finish(c, head);
    return true;
}

void net_connection_resume(struct net_connection *c)
{
    if (c->closed)
        return;
    if (conn_answer_parked(c))
        return;
    if (!c->parked_head)
        c->order_hold = false;
    if (c->next_transport_ops && !c->out_active && conn_swap_transport(c) < 0)
        return;
    if (!c->in_flight && !c->out_active && !c->throttled && !c->reading && !c->order_hold &&
        c->parked_count < NET_MAX_PARKED_REQUESTS) {
        if (c->loop->phase == NET_LOOP_CLOSING) {
            net_connection_close(c, "server stopping");
            return;
        }
        /* Pipelined bytes read earlier may already hold the next request. */
        if (c->loop->phase == NET_LOOP_RUNNING && conn_parse(c) < 0)
            return;
    }
    net_connection_update_poll(c);
    /* Bytes the transport holds will not make the socket readable. */
    if ((c->poll_events & UV_READABLE) && c->transport.ops->pending && c->transport.ops->pending(&c->transport) > 0)
        conn_read(c);
}

static void conn_on_throttle_end(uv_timer_t *timer)
{
    struct net_connection *c = timer->data;
    c->throttled = false;
    net_connection_resume(c);
}

static void conn_on_delay_end(uv_timer_t *timer)
{
    struct net_connection *c = timer->data;
    c->out_held = false;
    if (!c->closed)
        conn_write_and_continue(c);
}

/* Takes what a completion changes; the transport waits for its response. */
static void conn_apply_change(struct net_connection *c, struct net_conn_change *change)
{
    if (change->begin_reauthentication)
        c->authenticated = false;
    if (change->set_principal) {
        memcpy(c->principal_type, change->principal_type, sizeof(c->principal_type));
        memcpy(c->principal_name, change->principal_name, sizeof(c->principal_name));
        c->authenticated = true;
        logger_debug(NET_LOG, "connection %" PRIu64 " from %s now acts as %s:%s", c->id, c->peer, c->principal_type,
                     c->principal_name);
    }
    if (change->set_session_expiry)
        c->session_expiry_ms = change->session_expiry_ms;
    if (change->set_auth_state) {
        if (c->auth_state && c->auth_state != change->auth_state && c->auth_state_free)
            c->auth_state_free(c->auth_state);
        c->auth_state = change->auth_state;
        c->auth_state_free = change->auth_state_free;
        change->auth_state = NULL;
        change->set_auth_state = false;
    }
    if (change->transport_ops) {
        net_transport_release(c->next_transport_ops, c->next_transport_state, c->fd);
        c->next_transport_ops = change->transport_ops;
        c->next_transport_state = change->transport_state;
        change->transport_ops = NULL;
        change->transport_state = NULL;
    }
}

static void unlink_parked(struct net_connection *c, struct net_request_impl *req)
{
    struct net_request_impl *prev = NULL;
    for (struct net_request_impl *r = c->parked_head; r; prev = r, r = r->parked_next) {
        if (r != req)
            continue;
        if (prev)
            prev->parked_next = r->parked_next;
        else
            c->parked_head = r->parked_next;
        if (c->parked_tail == r)
            c->parked_tail = prev;
        c->parked_count--;
        r->parked = false;
        return;
    }
}

static void append_parked(struct net_connection *c, struct net_request_impl *req)
{
    req->parked = true;
    req->parked_done = false;
    req->parked_next = NULL;
    if (c->parked_tail)
        c->parked_tail->parked_next = req;
    else
        c->parked_head = req;
    c->parked_tail = req;
    c->parked_count++;
}

void net_connection_on_parked(struct net_request_impl *req)
{
    struct net_connection *c = req->conn;
    /* Closed meanwhile: it stays in_flight, cancelled, until it completes. */
    if (c->closed || c->in_flight != req)
        return;
    c->in_flight = NULL;
    append_parked(c, req);
    net_connection_resume(c);
}

void net_connection_abandon_parked(struct net_connection *c)
{
    while (c->parked_head) {
        struct net_request_impl *r = c->parked_head;
        c->parked_head = r->parked_next;
        if (r->parked_done)
            net_request_free(r);
    }
    c->parked_tail = NULL;
    c->parked_count = 0;
}

void net_connection_on_completed(struct net_request_impl *req)
{
    struct net_connection *c = req->conn;
    if (!req->parked)
        c->in_flight = NULL;
    if (c->closed) {
        unlink_parked(c, req);
        if (req->change && req->change->auth_state == c->auth_state)
            req->change->auth_state = NULL; /* the connection frees it */
        net_request_free(req);
        net_connection_free_if_done(c);
        return;
    }
    if (req->parked || c->parked_head) {
        /* Answered in request order: after the parked requests read
         * before it, when they are. */
        if (!req->parked)
            append_parked(c, req);
        req->parked_done = true;
        net_connection_resume(c);
        return;
    }
    conn_finish(c, req);
}

/* Applies a completed request and writes its response. */
static void conn_finish(struct net_connection *c, struct net_request_impl *req)
{
    c->last_activity_ms = clock_mono_ms();
    if (req->change)
        conn_apply_change(c, req->change);
    if (req->has_response) {
        req->has_response = false;
        if (net_connection_set_response(c, &req->response) != 0) {
            net_request_free(req);
            net_connection_close(c, "unusable response");
            return;
        }
    }
    bool close_after = req->close_after;
    int32_t throttle_ms = req->throttle_ms;
    int32_t delay_ms = req->delay_ms;
    net_request_free(req);

    if (close_after) {
        if (!c->out_active) {
            net_connection_close(c, "closed by the request handler");
            return;
        }
        c->close_after_write = true;
    }
    if (delay_ms > 0 && c->out_active) {
        /* The throttle timer is idle: the connection had a request in flight. */
        c->out_held = true;
        uv_timer_start(&c->throttle_timer, conn_on_delay_end, (uint64_t)delay_ms, 0);
        net_connection_update_poll(c);
        return;
    }
    if (throttle_ms > 0) {
        c->throttled = true;
        uv_timer_start(&c->throttle_timer, conn_on_throttle_end, (uint64_t)throttle_ms, 0);
    }
    if (c->out_active)
        conn_write_and_continue(c);
    else
        net_connection_resume(c);
}
