/* Network loop threads: each runs one libuv loop that owns a set of
 * connections, takes new sockets and completed requests from other threads
 * through a locked inbox plus a uv_async, and feeds the request queue. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/net_internal.h"
#include "util/clock.h"
#include "util/logger.h"

static void loop_on_wakeup(uv_async_t *async);
static void loop_check_done(struct net_loop *loop);

int net_loop_init(struct net_loop *loop, struct net_server *server, int index)
{
    memset(loop, 0, sizeof(*loop));
    loop->server = server;
    loop->index = index;
    if (uv_loop_init(&loop->uv) != 0)
        return -1;
    loop->uv.data = loop;
    pthread_mutex_init(&loop->mutex, NULL);
    uv_async_init(&loop->uv, &loop->wakeup, loop_on_wakeup);
    uv_timer_init(&loop->uv, &loop->idle_timer);
    uv_timer_init(&loop->uv, &loop->close_timer);
    loop->wakeup.data = loop;
    loop->idle_timer.data = loop;
    loop->close_timer.data = loop;
    loop->alive = true;
    return 0;
}

/* Runs on any thread. The lock makes sure the async handle is not closed
 * underneath us. */
void net_loop_wake(struct net_loop *loop)
{
    pthread_mutex_lock(&loop->mutex);
    if (loop->alive)
        uv_async_send(&loop->wakeup);
    pthread_mutex_unlock(&loop->mutex);
}

void net_loop_add_fd(struct net_loop *loop, const struct net_accepted *a)
{
    bool taken = false;
    pthread_mutex_lock(&loop->mutex);
    if (loop->alive && loop->requested_phase == NET_LOOP_RUNNING) {
        if (loop->new_fd_count == loop->new_fd_cap) {
            size_t cap = loop->new_fd_cap ? loop->new_fd_cap * 2 : 16;
            struct net_accepted *grown = realloc(loop->new_fds, cap * sizeof(*grown));
            if (grown) {
                loop->new_fds = grown;
                loop->new_fd_cap = cap;
            }
        }
        if (loop->new_fd_count < loop->new_fd_cap) {
            loop->new_fds[loop->new_fd_count++] = *a;
            uv_async_send(&loop->wakeup);
            taken = true;
        }
    }
    pthread_mutex_unlock(&loop->mutex);
    if (!taken) {
        logger_warn(NET_LOG, "dropping an accepted connection: network thread %d cannot take it", loop->index);
        net_accepted_drop(loop->server, a);
    }
}

void net_loop_request_phase(struct net_loop *loop, enum net_loop_phase phase, int64_t deadline_ms)
{
    pthread_mutex_lock(&loop->mutex);
    loop->requested_phase = phase;
    loop->close_deadline_ms = deadline_ms;
    if (loop->alive)
        uv_async_send(&loop->wakeup);
    pthread_mutex_unlock(&loop->mutex);
}

static void loop_update_all_polls(struct net_loop *loop)
{
    for (struct net_connection *c = loop->conns; c; c = c->next)
        net_connection_update_poll(c);
}

void net_loop_dispatch(struct net_loop *loop, struct net_connection *conn)
{
    struct net_server *server = loop->server;
    pthread_mutex_lock(&server->state_mutex);
    server->inflight++;
    pthread_mutex_unlock(&server->state_mutex);

    /* Earlier blocked connections go first, so queue space is shared fairly. */
    if (!loop->blocked_head && net_request_queue_try_push(&server->queue, conn->in_flight, loop->index))
        return;

    conn->waiting_dispatch = true;
    conn->blocked_next = NULL;
    if (loop->blocked_tail)
        loop->blocked_tail->blocked_next = conn;
    else
        loop->blocked_head = conn;
    loop->blocked_tail = conn;
    if (!loop->backpressured) {
        loop->backpressured = true;
        loop_update_all_polls(loop);
    }
}

void net_loop_unlink_blocked(struct net_loop *loop, struct net_connection *conn)
{
    struct net_connection *prev = NULL;
    for (struct net_connection *c = loop->blocked_head; c; prev = c, c = c->blocked_next) {
        if (c != conn)
            continue;
        if (prev)
            prev->blocked_next = c->blocked_next;
        else
            loop->blocked_head = c->blocked_next;
        if (loop->blocked_tail == c)
            loop->blocked_tail = prev;
        c->blocked_next = NULL;
        return;
    }
}

static void loop_retry_blocked(struct net_loop *loop)
{
    while (loop->blocked_head) {
        struct net_connection *c = loop->blocked_head;
        if (!net_request_queue_try_push(&loop->server->queue, c->in_flight, loop->index))
            return;
        loop->blocked_head = c->blocked_next;
        if (!loop->blocked_head)
            loop->blocked_tail = NULL;
        c->blocked_next = NULL;
        c->waiting_dispatch = false;
    }
    if (loop->backpressured) {
        loop->backpressured = false;
        loop_update_all_polls(loop);
    }
}

static void loop_on_idle_timer(uv_timer_t *timer)
{
    struct net_loop *loop = timer->data;
    int64_t idle_ms = loop->server->cfg.connections_max_idle_ms;
    int64_t now = clock_mono_ms();
    net_frame_pool_trim(&loop->server->frame_pool, now);
    for (struct net_connection *c = loop->conns, *next; c; c = next) {
        next = c->next;
        if (c->closed)
            continue;
        /* Bytes trickling in do not extend a transport's setup deadline. */
        const struct net_transport_ops *ops = c->transport.ops;
        int64_t deadline = ops->deadline_ms ? ops->deadline_ms(&c->transport) : 0;
        if (deadline > 0 && now >= deadline) {
            logger_info(NET_LOG, "closing connection %" PRIu64 " from %s: %s setup did not finish in time", c->id,
                        c->peer, ops->name);
            net_connection_close(c, "transport setup timed out");
            continue;
        }
        if (idle_ms <= 0 || c->in_flight || c->parked_head)
            continue;
        /* Writes count as activity: a peer that stops reading its responses
         * goes idle like one that stops sending. */
        if (now - c->last_activity_ms >= idle_ms) {
            net_connection_close(c, "idle for longer than connections.max.idle.ms");
            continue;
        }
        /* A peer trickling a request, or reading a response a byte at a
         * time, shows activity but never finishes: each request must
         * arrive, and each response be taken, within the same bound. */
        bool partial_request = c->reading || c->in_end > c->in_start;
        if (!partial_request)
            c->request_started_ms = 0;
        else if (c->request_started_ms == 0)
            c->request_started_ms = now; /* pipelined bytes left after the last request */
        if (partial_request && (c->poll_events & UV_READABLE) && now - c->request_started_ms >= idle_ms) {
            logger_info(NET_LOG,
                        "closing connection %" PRIu64 " from %s: a request took longer than "
                        "connections.max.idle.ms (%" PRId64 " ms) to arrive",
                        c->id, c->peer, idle_ms);
            net_connection_close(c, "request not received within connections.max.idle.ms");
            continue;
        }
        if (c->out_active && !c->out_held && now - c->response_started_ms >= idle_ms) {
            logger_info(NET_LOG,
                        "closing connection %" PRIu64 " from %s: a response was not read within "
                        "connections.max.idle.ms (%" PRId64 " ms)",
                        c->id, c->peer, idle_ms);
            net_connection_close(c, "response not read within connections.max.idle.ms");
        }
    }
}

static void loop_on_close_deadline(uv_timer_t *timer)
{
    struct net_loop *loop = timer->data;
    for (struct net_connection *c = loop->conns, *next; c; c = next) {
        next = c->next;
        if (c->closed)
            continue;
        /* What held the stop up to its deadline: named so a slow stop can
         * be traced to the peer that did not read, or the request that did
         * not finish. */
        logger_warn(NET_LOG, "stopping: connection %" PRIu64 " from %s on %s still open at the flush deadline (%s%s%s)",
                    c->id, c->peer, c->listener_name ? c->listener_name : "?",
                    c->out_active ? "its response not fully written" : "nothing to write",
                    c->in_flight ? ", a request in flight" : "", c->reading ? ", a request half read" : "");
        net_connection_close(c, "server stopping (flush deadline passed)");
    }
}

static void loop_enter_phase(struct net_loop *loop, enum net_loop_phase phase, int64_t deadline_ms)
{
    loop->phase = phase;
    if (phase == NET_LOOP_DRAINING) {
        loop_update_all_polls(loop);
        return;
    }
    uv_timer_stop(&loop->idle_timer);
    int64_t wait_ms = deadline_ms - clock_mono_ms();
    uv_timer_start(&loop->close_timer, loop_on_close_deadline, wait_ms > 0 ? (uint64_t)wait_ms : 0, 0);
    for (struct net_connection *c = loop->conns, *next; c; c = next) {
        next = c->next;
        if (c->closed)
            continue;
        if (c->out_active) {
            c->close_after_write = true;
            net_connection_update_poll(c);
        } else {
            net_connection_close(c, "server stopping");
        }
    }
}

static void loop_on_wakeup(uv_async_t *async)
{
    struct net_loop *loop = async->data;

    pthread_mutex_lock(&loop->mutex);
    struct net_accepted *fds = loop->new_fds;
    size_t fd_count = loop->new_fd_count;
    loop->new_fds = NULL;
    loop->new_fd_count = loop->new_fd_cap = 0;
    struct net_request_impl *completed = loop->completed_head;
    loop->completed_head = loop->completed_tail = NULL;
    struct net_request_impl *parked = loop->notice_head;
    loop->notice_head = loop->notice_tail = NULL;
    enum net_loop_phase phase = loop->requested_phase;
    int64_t deadline = loop->close_deadline_ms;
    pthread_mutex_unlock(&loop->mutex);

    for (size_t i = 0; i < fd_count; i++) {
        if (loop->phase != NET_LOOP_RUNNING || !net_connection_open(loop, &fds[i]))
            net_accepted_drop(loop->server, &fds[i]);
    }
    free(fds);

    /* Completions before a phase change, so responses that made the grace
     * period are written before their connection is closed. */
    /* A request parked before it completed: its notice goes first. */
    while (parked) {
        struct net_request_impl *next = parked->notice_next;
        net_connection_on_parked(parked);
        parked = next;
    }
    while (completed) {
        struct net_request_impl *next = completed->next;
        net_connection_on_completed(completed);
        completed = next;
    }
    loop_retry_blocked(loop);
    if (atomic_exchange(&loop->memory_recheck, false))
        loop_update_all_polls(loop);
    if (phase > loop->phase)
        loop_enter_phase(loop, phase, deadline);
    loop_check_done(loop);
}

void net_loop_connection_closed(struct net_loop *loop)
{
    loop_check_done(loop);
}

/* Once closing and every socket is shut, the loop closes its own handles;
 * uv_run then returns in the thread. */
static void loop_check_done(struct net_loop *loop)
{
    if (loop->phase != NET_LOOP_CLOSING || loop->open_conn_count > 0 || loop->handles_closing)
        return;
    loop->handles_closing = true;

    pthread_mutex_lock(&loop->mutex);
    loop->alive = false;
    struct net_request_impl *completed = loop->completed_head;
    loop->completed_head = loop->completed_tail = NULL;
    loop->notice_head = loop->notice_tail = NULL; /* their requests are completed or abandoned */
    pthread_mutex_unlock(&loop->mutex);

    /* Their connections are closed already; the requests were counted as
     * done by net_request_complete. */
    while (completed) {
        struct net_request_impl *next = completed->next;
        net_request_free(completed);
        completed = next;
    }
    uv_close((uv_handle_t *)&loop->wakeup, NULL);
    uv_close((uv_handle_t *)&loop->idle_timer, NULL);
    uv_close((uv_handle_t *)&loop->close_timer, NULL);
}

static void *loop_thread_main(void *arg)
{
    struct net_loop *loop = arg;
    int64_t idle_ms = loop->server->cfg.connections_max_idle_ms;
    /* Check often enough that a connection overstays by at most ~25%; the
     * sweep also enforces transport deadlines, so it always runs. */
    int64_t interval = idle_ms > 0 ? idle_ms / 4 : 1000;
    if (interval < 10)
        interval = 10;
    if (interval > 1000)
        interval = 1000;
    uv_timer_start(&loop->idle_timer, loop_on_idle_timer, (uint64_t)interval, (uint64_t)interval);
    uv_run(&loop->uv, UV_RUN_DEFAULT);
    /* Connections whose request was never completed in time stay until
     * net_loop_destroy: a worker may still be reading the request's
     * auth_state, which the connection owns. */
    return NULL;
}

/* After the workers are joined: the requests left are abandoned to their
 * completers (a parked Fetch, say), which will just free them. */
static void loop_free_abandoned_connections(struct net_loop *loop)
{
    while (loop->conns) {
        struct net_connection *c = loop->conns;
        c->in_flight = NULL;
        net_connection_abandon_parked(c);
        net_connection_free_if_done(c);
    }
}

int net_loop_thread_start(struct net_loop *loop)
{
    if (pthread_create(&loop->thread, NULL, loop_thread_main, loop) != 0)
        return -1;
    loop->thread_started = true;
    return 0;
}

void net_loop_join(struct net_loop *loop)
{
    if (loop->thread_started) {
        pthread_join(loop->thread, NULL);
        loop->thread_started = false;
        loop->joined = true;
    }
}

void net_loop_destroy(struct net_loop *loop)
{
    if (!loop->server)
        return;
    if (!loop->joined) {
        /* The thread never ran: close the handles here. */
        pthread_mutex_lock(&loop->mutex);
        loop->alive = false;
        pthread_mutex_unlock(&loop->mutex);
        uv_close((uv_handle_t *)&loop->wakeup, NULL);
        uv_close((uv_handle_t *)&loop->idle_timer, NULL);
        uv_close((uv_handle_t *)&loop->close_timer, NULL);
        uv_run(&loop->uv, UV_RUN_DEFAULT);
    }
    loop_free_abandoned_connections(loop);
    uv_loop_close(&loop->uv);
    for (size_t i = 0; i < loop->new_fd_count; i++)
        net_accepted_drop(loop->server, &loop->new_fds[i]);
    free(loop->new_fds);
    pthread_mutex_destroy(&loop->mutex);
    loop->server = NULL;
}
