/* Listening sockets and the accept thread, which hands each accepted socket
 * to the network loops in turn. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/net_internal.h"
#include "util/clock.h"
#include "util/logger.h"

/* Wait before accepting again when out of descriptors; level-triggered
 * polling would otherwise spin on EMFILE. */
#define NET_ACCEPT_RETRY_MS 100

static int listener_bind_addrinfo(const struct addrinfo *ai, int backlog, char *why, size_t whylen)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
        snprintf(why, whylen, "socket: %s", strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (ai->ai_family == AF_INET6) {
        int zero = 0; /* dual stack for "::" */
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    }
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        snprintf(why, whylen, "bind: %s", strerror(errno));
        close(fd);
        return -1;
    }
    if (listen(fd, backlog) != 0) {
        snprintf(why, whylen, "listen: %s", strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

static int listener_port_of(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return -1;
    if (ss.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return -1;
}

static int listener_open(const struct net_listener_config *lc, int backlog, struct net_listener *out, char *err,
                         size_t errlen)
{
    const char *host = lc->host;
    char port[16];
    snprintf(port, sizeof(port), "%d", lc->port);

    /* An empty host means every interface: try dual-stack IPv6 first. */
    const char *candidates[2] = {host, NULL};
    if (host[0] == '\0') {
        candidates[0] = "::";
        candidates[1] = "0.0.0.0";
    }

    char why[160] = "no usable address";
    for (int c = 0; c < 2 && candidates[c]; c++) {
        struct addrinfo hints, *res = NULL;
        memset(&hints, 0, sizeof(hints));
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_PASSIVE;
        int rc = getaddrinfo(candidates[c], port, &hints, &res);
        if (rc != 0) {
            snprintf(why, sizeof(why), "%s", gai_strerror(rc));
            continue;
        }
        for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
            int fd = listener_bind_addrinfo(ai, backlog, why, sizeof(why));
            if (fd >= 0) {
                freeaddrinfo(res);
                out->fd = fd;
                out->port = listener_port_of(fd);
                return 0;
            }
        }
        freeaddrinfo(res);
    }
    snprintf(err, errlen, "listener %s (%s:%d): %s", lc->name, lc->host, lc->port, why);
    return -1;
}

int net_listeners_open(struct net_server *server, char *err, size_t errlen)
{
    for (int i = 0; i < NET_MAX_LISTENERS; i++)
        server->listeners[i].fd = -1;
    for (int i = 0; i < server->cfg.listener_count; i++) {
        if (listener_open(&server->cfg.listeners[i], server->cfg.socket_listen_backlog_size, &server->listeners[i], err,
                          errlen) != 0) {
            net_listeners_close(server);
            return -1;
        }
        logger_info(NET_LOG, "listening on %s %s:%d", server->cfg.listeners[i].name, server->cfg.listeners[i].host,
                    server->listeners[i].port);
    }
    return 0;
}

void net_listeners_close(struct net_server *server)
{
    for (int i = 0; i < NET_MAX_LISTENERS; i++) {
        if (server->listeners[i].fd >= 0) {
            close(server->listeners[i].fd);
            server->listeners[i].fd = -1;
        }
    }
}

static void accept_tune_socket(const struct net_config *cfg, int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (cfg->socket_send_buffer_bytes > 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &cfg->socket_send_buffer_bytes, sizeof(int));
    if (cfg->socket_receive_buffer_bytes > 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &cfg->socket_receive_buffer_bytes, sizeof(int));
}

static void accept_pause_all(struct net_server *server, bool pause);
static void accept_on_readable(uv_poll_t *handle, int status, int events);

static void accept_on_throttle_end(uv_timer_t *timer)
{
    struct net_server *server = timer->loop->data;
    int index = (int)(intptr_t)timer->data;
    server->listeners[index].throttled = false;
    uv_poll_start(&server->listeners[index].poll, UV_READABLE, accept_on_readable);
}

/* max.connection.creation.rate, the listener's and the broker's: true when
 * the listener must wait before accepting one more. It then stops polling
 * until the rate allows; connections wait in the kernel's backlog
 * (socket.listen.backlog.size), as Kafka's acceptor throttles. */
static bool accept_throttle(struct net_server *server, int index)
{
    struct net_listener *l = &server->listeners[index];
    int64_t now = clock_mono_ms();
    int64_t wait = net_rate_limit_wait_ms(&l->creation_rate, now);
    int64_t broker_wait = net_rate_limit_wait_ms(&server->creation_rate, now);
    if (broker_wait > wait)
        wait = broker_wait;
    if (wait == 0)
        return false;
    if (server->accepts_throttled++ % 1000 == 0)
        logger_info(NET_LOG, "listener %s: max.connection.creation.rate reached, accepting again in %lld ms",
                    server->cfg.listeners[index].name, (long long)wait);
    l->throttled = true;
    uv_poll_stop(&l->poll);
    uv_timer_start(&l->throttle_timer, accept_on_throttle_end, (uint64_t)wait, 0);
    return true;
}

static void accept_on_readable(uv_poll_t *handle, int status, int events)
{
    struct net_server *server = handle->loop->data;
    int index = (int)(intptr_t)handle->data;
    (void)events;
    if (status < 0) {
        logger_warn(NET_LOG, "accept poll error on listener %d: %s", index, uv_strerror(status));
        return;
    }
    for (;;) {
        if (accept_throttle(server, index))
            return;
        struct sockaddr_storage ss;
        socklen_t sslen = sizeof(ss);
        memset(&ss, 0, sizeof(ss));
        int fd = accept4(server->listeners[index].fd, (struct sockaddr *)&ss, &sslen, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return;
            logger_warn(NET_LOG, "accept on %s: %s", server->cfg.listeners[index].name, strerror(errno));
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                accept_pause_all(server, true);
            }
            return;
        }
        net_rate_limit_take(&server->listeners[index].creation_rate);
        net_rate_limit_take(&server->creation_rate);
        struct net_accepted a = {.fd = fd, .listener_index = index};
        net_ip_from_sockaddr(&ss, &a.ip);
        int limit = 0;
        const char *refused = net_conn_limits_admit_counted(&server->limits, &a.ip, &limit, &a.ip_counted);
        if (refused) {
            net_conn_limits_log_refusal(&server->limits, fd, refused, limit);
            close(fd);
            continue;
        }
        accept_tune_socket(&server->cfg, fd);
        struct net_loop *loop = &server->loops[server->next_loop % (unsigned)server->loop_count];
        server->next_loop++;
        net_loop_add_fd(loop, &a);
    }
}

static void accept_on_retry(uv_timer_t *timer)
{
    accept_pause_all(timer->loop->data, false);
}

static void accept_pause_all(struct net_server *server, bool pause)
{
    for (int i = 0; i < server->cfg.listener_count; i++) {
        if (pause)
            uv_poll_stop(&server->listeners[i].poll);
        else if (!server->listeners[i].throttled)
            uv_poll_start(&server->listeners[i].poll, UV_READABLE, accept_on_readable);
    }
    if (pause)
        uv_timer_start(&server->accept_retry, accept_on_retry, NET_ACCEPT_RETRY_MS, 0);
}

static void accept_on_stop(uv_async_t *async)
{
    struct net_server *server = async->loop->data;
    for (int i = 0; i < server->cfg.listener_count; i++) {
        uv_close((uv_handle_t *)&server->listeners[i].poll, NULL);
        uv_close((uv_handle_t *)&server->listeners[i].throttle_timer, NULL);
    }
    uv_close((uv_handle_t *)&server->accept_retry, NULL);
    uv_close((uv_handle_t *)&server->accept_stop, NULL);
}

static void *accept_thread_main(void *arg)
{
    struct net_server *server = arg;
    uv_run(&server->accept_uv, UV_RUN_DEFAULT);
    return NULL;
}

int net_accept_thread_start(struct net_server *server, char *err, size_t errlen)
{
    int rc = uv_loop_init(&server->accept_uv);
    if (rc != 0) {
        snprintf(err, errlen, "accept loop: %s", uv_strerror(rc));
        return -1;
    }
    server->accept_uv.data = server;
    uv_async_init(&server->accept_uv, &server->accept_stop, accept_on_stop);
    uv_timer_init(&server->accept_uv, &server->accept_retry);
    int64_t now = clock_mono_ms();
    net_rate_limit_init(&server->creation_rate, server->cfg.max_connection_creation_rate, now);
    for (int i = 0; i < server->cfg.listener_count; i++) {
        struct net_listener *l = &server->listeners[i];
        net_rate_limit_init(&l->creation_rate, server->cfg.listeners[i].max_connection_creation_rate, now);
        uv_timer_init(&server->accept_uv, &l->throttle_timer);
        l->throttle_timer.data = (void *)(intptr_t)i;
        l->throttle_timer_initialised = true;
    }
    for (int i = 0; i < server->cfg.listener_count; i++) {
        uv_poll_t *poll = &server->listeners[i].poll;
        rc = uv_poll_init_socket(&server->accept_uv, poll, server->listeners[i].fd);
        if (rc == 0) {
            server->listeners[i].poll_initialised = true;
            poll->data = (void *)(intptr_t)i;
            rc = uv_poll_start(poll, UV_READABLE, accept_on_readable);
        }
        if (rc != 0) {
            snprintf(err, errlen, "accept poll: %s", uv_strerror(rc));
            goto fail;
        }
    }
    if (pthread_create(&server->accept_thread, NULL, accept_thread_main, server) != 0) {
        snprintf(err, errlen, "cannot start the accept thread");
        goto fail;
    }
    server->accept_started = true;
    return 0;

fail:
    for (int i = 0; i < server->cfg.listener_count; i++) {
        if (server->listeners[i].poll_initialised)
            uv_close((uv_handle_t *)&server->listeners[i].poll, NULL);
        if (server->listeners[i].throttle_timer_initialised)
            uv_close((uv_handle_t *)&server->listeners[i].throttle_timer, NULL);
    }
    uv_close((uv_handle_t *)&server->accept_retry, NULL);
    uv_close((uv_handle_t *)&server->accept_stop, NULL);
    uv_run(&server->accept_uv, UV_RUN_DEFAULT);
    uv_loop_close(&server->accept_uv);
    return -1;
}

void net_accept_thread_stop(struct net_server *server)
{
    if (!server->accept_started)
        return;
    uv_async_send(&server->accept_stop);
    pthread_join(server->accept_thread, NULL);
    uv_loop_close(&server->accept_uv);
    server->accept_started = false;
}
