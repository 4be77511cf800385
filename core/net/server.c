/* Server lifecycle (start, stop, free), the io threads, and request
 * allocation and completion. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metrics/metrics.h"
#include "net/net_internal.h"
#include "util/clock.h"
#include "util/logger.h"

/* Shortest time given to write out pending responses when stopping, even
 * when the grace period is already used up. */
#define NET_FLUSH_MIN_MS 200
#define NET_MAX_NETWORK_THREADS 64
#define NET_MAX_IO_THREADS 1024
#define NET_MAX_QUEUED_REQUESTS (1 << 20)

void net_config_defaults(struct net_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    snprintf(cfg->listeners[0].name, sizeof(cfg->listeners[0].name), "PLAINTEXT");
    snprintf(cfg->listeners[0].host, sizeof(cfg->listeners[0].host), "0.0.0.0");
    cfg->listeners[0].port = 9092;
    cfg->listener_count = 1;
    cfg->num_network_threads = 3;
    cfg->num_io_threads = 8;
    cfg->queued_max_requests = 500;
    cfg->socket_request_max_bytes = 104857600;
    cfg->sasl_server_max_receive_size = 524288;
    cfg->connections_max_idle_ms = 600000;
    cfg->socket_send_buffer_bytes = 102400;
    cfg->socket_receive_buffer_bytes = 102400;
    cfg->max_connections = INT32_MAX;
    cfg->max_connections_per_ip = INT32_MAX;
    cfg->max_connection_creation_rate = INT32_MAX;
    for (int i = 0; i < NET_MAX_LISTENERS; i++)
        cfg->listeners[i].max_connection_creation_rate = INT32_MAX;
    cfg->socket_listen_backlog_size = 50;
    cfg->queued_max_request_bytes = -1;
}

const char *net_security_protocol_name(int protocol)
{
    switch (protocol) {
    case NET_SECURITY_PLAINTEXT:
        return "PLAINTEXT";
    case NET_SECURITY_SSL:
        return "SSL";
    case NET_SECURITY_SASL_PLAINTEXT:
        return "SASL_PLAINTEXT";
    case NET_SECURITY_SASL_SSL:
        return "SASL_SSL";
    default:
        return "UNKNOWN";
    }
}

static int config_check(const struct net_config *cfg, char *err, size_t errlen)
{
    if (cfg->listener_count < 1 || cfg->listener_count > NET_MAX_LISTENERS) {
        snprintf(err, errlen, "listener count %d must be 1..%d", cfg->listener_count, NET_MAX_LISTENERS);
        return -1;
    }
    for (int i = 0; i < cfg->listener_count; i++) {
        const struct net_listener_config *lc = &cfg->listeners[i];
        if (lc->name[0] == '\0' || memchr(lc->name, '\0', sizeof(lc->name)) == NULL ||
            memchr(lc->host, '\0', sizeof(lc->host)) == NULL) {
            snprintf(err, errlen, "listener %d needs a name and a terminated host", i);
            return -1;
        }
        if (lc->port < 0 || lc->port > 65535) {
            snprintf(err, errlen, "listener %s: port %d must be 0..65535", lc->name, lc->port);
            return -1;
        }
        /* Serving TLS listeners as plaintext would be a silent security
         * hole: without a transport for them, refuse. SASL_PLAINTEXT runs
         * on the plain transport (the handlers authenticate). */
        if (lc->security_protocol != NET_SECURITY_PLAINTEXT && lc->security_protocol != NET_SECURITY_SASL_PLAINTEXT &&
            !lc->transport_init) {
            snprintf(err, errlen,
                     "listener %s: security protocol %s is not supported (only PLAINTEXT and SASL_PLAINTEXT "
                     "listeners can be served)",
                     lc->name, net_security_protocol_name(lc->security_protocol));
            return -1;
        }
        if (lc->max_connection_creation_rate < 0) {
            snprintf(err, errlen, "listener %s: max.connection.creation.rate %d must be >= 0", lc->name,
                     lc->max_connection_creation_rate);
            return -1;
        }
    }
    if (cfg->max_connection_creation_rate < 0) {
        snprintf(err, errlen, "max.connection.creation.rate %d must be >= 0", cfg->max_connection_creation_rate);
        return -1;
    }
    if (cfg->socket_listen_backlog_size < 1) {
        snprintf(err, errlen, "socket.listen.backlog.size %d must be >= 1", cfg->socket_listen_backlog_size);
        return -1;
    }
    if (cfg->queued_max_request_bytes < -1 || cfg->queued_max_request_bytes == 0) {
        snprintf(err, errlen, "queued.max.request.bytes %lld must be -1 or positive",
                 (long long)cfg->queued_max_request_bytes);
        return -1;
    }
    if (cfg->num_network_threads < 1 || cfg->num_network_threads > NET_MAX_NETWORK_THREADS) {
        snprintf(err, errlen, "num.network.threads %d must be 1..%d", cfg->num_network_threads,
                 NET_MAX_NETWORK_THREADS);
        return -1;
    }
    if (cfg->num_io_threads < 1 || cfg->num_io_threads > NET_MAX_IO_THREADS) {
        snprintf(err, errlen, "num.io.threads %d must be 1..%d", cfg->num_io_threads, NET_MAX_IO_THREADS);
        return -1;
    }
    if (cfg->queued_max_requests < 1 || cfg->queued_max_requests > NET_MAX_QUEUED_REQUESTS) {
        snprintf(err, errlen, "queued.max.requests %d must be 1..%d", cfg->queued_max_requests,
                 NET_MAX_QUEUED_REQUESTS);
        return -1;
    }
    if (cfg->socket_request_max_bytes < 1 || cfg->socket_request_max_bytes > INT32_MAX) {
        snprintf(err, errlen, "socket.request.max.bytes %lld must be 1..%d", (long long)cfg->socket_request_max_bytes,
                 INT32_MAX);
        return -1;
    }
    if (cfg->sasl_server_max_receive_size < 1 || cfg->sasl_server_max_receive_size > INT32_MAX) {
        snprintf(err, errlen, "sasl.server.max.receive.size %lld must be 1..%d",
                 (long long)cfg->sasl_server_max_receive_size, INT32_MAX);
        return -1;
    }
    return 0;
}

struct net_request_impl *net_request_new(struct net_connection *conn, size_t frame_len, size_t have)
{
    struct net_request_impl *req = calloc(1, sizeof(*req));
    if (!req)
        return NULL;
    if (frame_len <= NET_FRAME_INITIAL_BYTES) {
        req->pub.frame = malloc(frame_len > 0 ? frame_len : 1);
        req->frame_cap = frame_len;
    } else {
        req->frame_pooled = true;
        req->pub.frame = net_frame_pool_take(&conn->loop->server->frame_pool, frame_len,
                                             have > NET_FRAME_INITIAL_BYTES ? have : NET_FRAME_INITIAL_BYTES,
                                             &req->frame_cap);
    }
    if (!req->pub.frame) {
        free(req);
        return NULL;
    }
    req->pub.frame_len = frame_len;
    req->pub.connection_id = conn->id;
    memcpy(req->pub.peer, conn->peer, sizeof(req->pub.peer));
    req->pub.listener_name = conn->listener_name;
    req->pub.security_protocol = conn->security_protocol;
    memcpy(req->principal_type, conn->principal_type, sizeof(req->principal_type));
    memcpy(req->principal_name, conn->principal_name, sizeof(req->principal_name));
    req->pub.principal_type = req->principal_type;
    req->pub.principal_name = req->principal_name;
    req->pub.auth_state = conn->auth_state;
    req->conn = conn;
    req->loop = conn->loop;
    pthread_mutex_init(&req->cancel_lock, NULL);
    /* The whole frame counts from here, as it will be allocated in full
     * however slowly the rest arrives; a frame larger than the input
     * buffer gets here once its first 16 KiB have (conn_parse). */
    struct net_server *server = conn->loop->server;
    req->counted_bytes = frame_len;
    int64_t now = atomic_fetch_add(&server->queued_request_bytes, (int64_t)frame_len) + (int64_t)frame_len;
    int64_t peak = atomic_load(&server->queued_request_bytes_peak);
    while (now > peak && !atomic_compare_exchange_weak(&server->queued_request_bytes_peak, &peak, now))
        ;
    metrics_set(server->queued_bytes_gauge, now);
    if (now > peak)
        metrics_set(server->queued_bytes_peak_gauge, now);
    return req;
}

bool net_server_memory_full(struct net_server *server)
{
    int64_t limit = server->cfg.queued_max_request_bytes;
    if (limit <= 0 || atomic_load(&server->queued_request_bytes) < limit)
        return false;
    /* Say a loop waits before looking again, so a free that races with
     * this either sees the flag or is seen here. */
    atomic_store(&server->memory_muted, true);
    return atomic_load(&server->queued_request_bytes) >= limit;
}

static void request_uncount(struct net_request_impl *req)
{
    struct net_server *server = req->loop->server;
    int64_t now = atomic_fetch_sub(&server->queued_request_bytes, (int64_t)req->counted_bytes) -
                  (int64_t)req->counted_bytes;
    req->counted_bytes = 0;
    metrics_set(server->queued_bytes_gauge, now);
    int64_t limit = server->cfg.queued_max_request_bytes;
    if (limit <= 0 || now >= limit || !atomic_load(&server->memory_muted))
        return;
    if (!atomic_exchange(&server->memory_muted, false))
        return;
    for (int i = 0; i < server->loop_count; i++) {
        atomic_store(&server->loops[i].memory_recheck, true);
        net_loop_wake(&server->loops[i]);
    }
}

void net_request_free(struct net_request_impl *req)
{
    if (!req)
        return;
    if (req->has_response)
        kafka_writer_free(&req->response);
    if (req->change) {
        /* A transport that never got installed still owns its state. */
        net_transport_release(req->change->transport_ops, req->change->transport_state, -1);
        if (req->change->auth_state && req->change->auth_state_free)
            req->change->auth_state_free(req->change->auth_state);
        free(req->change);
    }
    if (req->frame_pooled)
        net_frame_pool_give(&req->loop->server->frame_pool, req->pub.frame, req->frame_cap, clock_mono_ms());
    else
        free(req->pub.frame);
    if (req->counted_bytes)
        request_uncount(req);
    pthread_mutex_destroy(&req->cancel_lock);
    free(req);
}

void net_request_set_cancel(struct net_request *pub, net_request_cancel_fn fn, void *arg)
{
    struct net_request_impl *req = (struct net_request_impl *)pub;
    pthread_mutex_lock(&req->cancel_lock);
    req->cancel_fn = fn;
    req->cancel_arg = arg;
    if (req->cancelled && fn) {
        req->cancel_fn = NULL;
        fn(arg);
    }
    pthread_mutex_unlock(&req->cancel_lock);
}

void net_request_cancel(struct net_request_impl *req)
{
    pthread_mutex_lock(&req->cancel_lock);
    req->cancelled = true;
    net_request_cancel_fn fn = req->cancel_fn;
    req->cancel_fn = NULL;
    if (fn)
        fn(req->cancel_arg);
    pthread_mutex_unlock(&req->cancel_lock);
}

void net_server_request_done(struct net_server *server)
{
    pthread_mutex_lock(&server->state_mutex);
    server->inflight--;
    if (server->inflight == 0)
        pthread_cond_broadcast(&server->state_cond);
    pthread_mutex_unlock(&server->state_mutex);
}

/* The change record of a request, allocated on first use; NULL when out of
 * memory. */
static struct net_conn_change *request_change(struct net_request *pub)
{
    struct net_request_impl *req = (struct net_request_impl *)pub;
    if (!req->change)
        req->change = calloc(1, sizeof(*req->change));
    return req->change;
}

int net_request_set_principal(struct net_request *pub, const char *type, const char *name)
{
    if (!type || !name || type[0] == '\0' || name[0] == '\0' || strlen(type) >= NET_PRINCIPAL_TYPE_MAX ||
        strlen(name) >= NET_PRINCIPAL_NAME_MAX)
        return -1;
    struct net_conn_change *change = request_change(pub);
    if (!change)
        return -1;
    memcpy(change->principal_type, type, strlen(type) + 1);
    memcpy(change->principal_name, name, strlen(name) + 1);
    change->set_principal = true;
    return 0;
}

void net_request_set_session_expiry(struct net_request *pub, int64_t expiry_mono_ms)
{
    struct net_conn_change *change = request_change(pub);
    if (!change) {
        /* Cannot record it: make the request close its connection instead
         * of leaving a session that should expire without a deadline. */
        ((struct net_request_impl *)pub)->close_on_oom = true;
        return;
    }
    change->session_expiry_ms = expiry_mono_ms > 0 ? expiry_mono_ms : 0;
    change->set_session_expiry = true;
}

void net_request_begin_reauthentication(struct net_request *pub)
{
    struct net_conn_change *change = request_change(pub);
    if (!change) {
        /* Unbounded re-authentication frames are not an option. */
        ((struct net_request_impl *)pub)->close_on_oom = true;
        return;
    }
    change->begin_reauthentication = true;
}

int net_request_set_auth_state(struct net_request *pub, void *state, void (*free_fn)(void *state))
{
    struct net_conn_change *change = request_change(pub);
    if (!change) {
        if (state && state != pub->auth_state && free_fn)
            free_fn(state);
        ((struct net_request_impl *)pub)->close_on_oom = true;
        return -1;
    }
    if (change->auth_state && change->auth_state != state && change->auth_state_free)
        change->auth_state_free(change->auth_state);
    change->set_auth_state = true;
    change->auth_state = state;
    change->auth_state_free = free_fn;
    return 0;
}

void net_request_set_transport(struct net_request *pub, const struct net_transport_ops *ops, void *state)
{
    struct net_conn_change *change = request_change(pub);
    if (!change) {
        net_transport_release(ops, state, -1);
        ((struct net_request_impl *)pub)->close_on_oom = true;
        return;
    }
    net_transport_release(change->transport_ops, change->transport_state, -1);
    change->transport_ops = ops;
    change->transport_state = state;
}

void net_request_delay_response(struct net_request *pub, int32_t delay_ms)
{
    ((struct net_request_impl *)pub)->delay_ms = delay_ms > 0 ? delay_ms : 0;
}

void net_request_pipeline_next(struct net_request *pub)
{
    struct net_request_impl *req = (struct net_request_impl *)pub;
    struct net_loop *loop = req->loop;
    /* Queued before the completion can be: the loop takes both lists at
     * once and reads the notices first. */
    pthread_mutex_lock(&loop->mutex);
    if (loop->alive) {
        req->notice_next = NULL;
        if (loop->notice_tail)
            loop->notice_tail->notice_next = req;
        else
            loop->notice_head = req;
        loop->notice_tail = req;
        uv_async_send(&loop->wakeup);
    }
    pthread_mutex_unlock(&loop->mutex);
}

void net_request_complete(struct net_request *pub, struct kafka_writer *response, int32_t throttle_ms, bool close_after)
{
    struct net_request_impl *req = (struct net_request_impl *)pub;
    /* From here the hook's argument may be freed: wait out a running hook. */
    pthread_mutex_lock(&req->cancel_lock);
    req->cancel_fn = NULL;
    pthread_mutex_unlock(&req->cancel_lock);
    if (response) {
        req->response = *response;
        memset(response, 0, sizeof(*response));
        req->has_response = true;
    }
    req->throttle_ms = throttle_ms > 0 ? throttle_ms : 0;
    req->close_after = close_after || req->close_on_oom;

    struct net_loop *loop = req->loop;
    /* Counted done while the loop lock is held, so a stopping server sees
     * the completion queued before it asks the loop to close. */
    pthread_mutex_lock(&loop->mutex);
    if (loop->alive) {
        req->next = NULL;
        if (loop->completed_tail)
            loop->completed_tail->next = req;
        else
            loop->completed_head = req;
        loop->completed_tail = req;
        uv_async_send(&loop->wakeup);
    } else {
        net_request_free(req);
    }
    net_server_request_done(loop->server);
    pthread_mutex_unlock(&loop->mutex);
}

int net_server_bound_port(struct net_server *server, int listener_index)
{
    if (!server || listener_index < 0 || listener_index >= server->cfg.listener_count)
        return -1;
    return server->listeners[listener_index].port;
}

static void *worker_main(void *arg)
{
    struct net_server *server = arg;
    for (;;) {
        struct net_request_impl *req = net_request_queue_pop(&server->queue);
        if (!req)
            return NULL;
        server->handler(&req->pub, server->handler_ctx);
    }
}

static void server_on_queue_space(void *ctx, int producer)
{
    struct net_server *server = ctx;
    net_loop_wake(&server->loops[producer]);
}

/* A peer resetting its connection must never kill the process; sendfile()
 * has no MSG_NOSIGNAL, so SIGPIPE is ignored unless someone handles it. */
static void server_ignore_sigpipe(void)
{
    struct sigaction current;
    if (sigaction(SIGPIPE, NULL, &current) == 0 && current.sa_handler == SIG_DFL) {
        struct sigaction ignore;
        memset(&ignore, 0, sizeof(ignore));
        ignore.sa_handler = SIG_IGN;
        sigemptyset(&ignore.sa_mask);
        sigaction(SIGPIPE, &ignore, NULL);
    }
}

int net_server_start(const struct net_config *cfg, net_request_handler handler, void *ctx, struct net_server **out,
                     char *err, size_t errlen)
{
    *out = NULL;
    if (!handler) {
        snprintf(err, errlen, "a request handler is required");
        return -1;
    }
    if (config_check(cfg, err, errlen) != 0)
        return -1;
    struct net_server *server = calloc(1, sizeof(*server));
    if (!server) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    server->cfg = *cfg;
    server->handler = handler;
    server->handler_ctx = ctx;
    for (int i = 0; i < NET_MAX_LISTENERS; i++)
        server->listeners[i].fd = -1;
    net_frame_pool_init(&server->frame_pool);
    pthread_mutex_init(&server->state_mutex, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&server->state_cond, &attr);
    pthread_condattr_destroy(&attr);
    atomic_init(&server->next_connection_id, 0);
    server->queued_bytes_gauge = metrics_register(METRICS_GAUGE, "cairn_queued_request_bytes", NULL,
                                                  "Frame bytes of requests read and not yet answered "
                                                  "(queued.max.request.bytes bounds them).");
    server->queued_bytes_peak_gauge = metrics_register(METRICS_GAUGE, "cairn_queued_request_bytes_max", NULL,
                                                       "Highest cairn_queued_request_bytes since the start.");
    server_ignore_sigpipe();
    if (net_conn_limits_init(&server->limits, cfg, err, errlen) != 0)
        goto fail;

    if (net_request_queue_init(&server->queue, (size_t)cfg->queued_max_requests, cfg->num_network_threads,
                               server_on_queue_space, server) != 0) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    server->loops = calloc((size_t)cfg->num_network_threads, sizeof(*server->loops));
    server->workers = calloc((size_t)cfg->num_io_threads, sizeof(*server->workers));
    if (!server->loops || !server->workers) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    for (int i = 0; i < cfg->num_network_threads; i++) {
        if (net_loop_init(&server->loops[i], server, i) != 0) {
            snprintf(err, errlen, "cannot create network loop %d", i);
            goto fail;
        }
        server->loop_count = i + 1;
    }
    if (net_listeners_open(server, err, errlen) != 0)
        goto fail;
    for (int i = 0; i < server->loop_count; i++) {
        if (net_loop_thread_start(&server->loops[i]) != 0) {
            snprintf(err, errlen, "cannot start network thread %d", i);
            goto fail;
        }
    }
    for (int i = 0; i < cfg->num_io_threads; i++) {
        if (pthread_create(&server->workers[i], NULL, worker_main, server) != 0) {
            snprintf(err, errlen, "cannot start io thread %d", i);
            goto fail;
        }
        server->workers_started = i + 1;
    }
    if (net_accept_thread_start(server, err, errlen) != 0)
        goto fail;
    server->running = true;
    logger_info(NET_LOG, "started %d network threads and %d io threads", server->loop_count, server->workers_started);
    *out = server;
    return 0;

fail:
    net_server_free(server);
    return -1;
}

static void server_wait_inflight(struct net_server *server, int64_t deadline_ms)
{
    pthread_mutex_lock(&server->state_mutex);
    while (server->inflight > 0) {
        int64_t left = deadline_ms - clock_mono_ms();
        if (left <= 0)
            break;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += left / 1000;
        ts.tv_nsec += (left % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&server->state_cond, &server->state_mutex, &ts);
    }
    if (server->inflight > 0)
        logger_warn(NET_LOG, "stopping with %lld requests still in flight", (long long)server->inflight);
    pthread_mutex_unlock(&server->state_mutex);
}

void net_server_stop(struct net_server *server, int64_t grace_ms)
{
    if (!server || server->stopped)
        return;
    server->stopped = true;
    int64_t deadline = clock_mono_ms() + (grace_ms > 0 ? grace_ms : 0);

    net_accept_thread_stop(server);
    net_listeners_close(server);
    for (int i = 0; i < server->loop_count; i++)
        net_loop_request_phase(&server->loops[i], NET_LOOP_DRAINING, 0);
    if (server->workers_started > 0)
        server_wait_inflight(server, deadline);

    int64_t flush_deadline = clock_mono_ms() + NET_FLUSH_MIN_MS;
    if (flush_deadline < deadline)
        flush_deadline = deadline;
    for (int i = 0; i < server->loop_count; i++)
        net_loop_request_phase(&server->loops[i], NET_LOOP_CLOSING, flush_deadline);
    for (int i = 0; i < server->loop_count; i++)
        net_loop_join(&server->loops[i]);

    if (server->queue.items) {
        net_request_queue_close(&server->queue);
        for (int i = 0; i < server->workers_started; i++)
            pthread_join(server->workers[i], NULL);
        server->workers_started = 0;
        struct net_request_impl *req;
        while ((req = net_request_queue_take_leftover(&server->queue)) != NULL)
            net_request_complete(&req->pub, NULL, 0, true);
    }
    if (server->running)
        logger_info(NET_LOG, "network layer stopped");
    server->running = false;
}

void net_server_free(struct net_server *server)
{
    if (!server)
        return;
    net_server_stop(server, 0);
    for (int i = 0; i < server->loop_count; i++)
        net_loop_destroy(&server->loops[i]);
    free(server->loops);
    free(server->workers);
    net_request_queue_destroy(&server->queue);
    net_conn_limits_destroy(&server->limits);    /* after the loops: they count out their sockets */
    net_frame_pool_destroy(&server->frame_pool); /* after the loops: their requests give frames back */
    pthread_mutex_destroy(&server->state_mutex);
    pthread_cond_destroy(&server->state_cond);
    free(server);
}
