/* GET /metrics over HTTP/1.0-style one-shot connections, served one at a
 * time on a dedicated thread: scrapes are rare and small. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "metrics/metrics.h"
#include "util/logger.h"

#define METRICS_HTTP_READ_TIMEOUT_MS 2000
#define METRICS_HTTP_MAX_REQUEST 8192

/* Created and stopped by the main thread; the listener fd and stop pipe
 * are read by the serving thread only. */
struct metrics_http {
    int listen_fd;
    int stop_pipe[2];
    int port;
    pthread_t thread;
};

static void send_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        data += n;
        len -= (size_t)n;
    }
}

static void respond(int fd, const char *status, const char *type, const char *body, size_t body_len)
{
    char head[256];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n", status,
                     type, body_len);
    send_all(fd, head, (size_t)n);
    send_all(fd, body, body_len);
}

static void serve_one(int fd)
{
    char req[METRICS_HTTP_MAX_REQUEST + 1];
    size_t got = 0;
    /* Read until the end of the request head, a timeout, or a full buffer. */
    while (got < METRICS_HTTP_MAX_REQUEST) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, METRICS_HTTP_READ_TIMEOUT_MS) <= 0)
            return;
        ssize_t n = recv(fd, req + got, METRICS_HTTP_MAX_REQUEST - got, 0);
        if (n <= 0)
            return;
        got += (size_t)n;
        req[got] = '\0';
        if (strstr(req, "\r\n\r\n") || strstr(req, "\n\n"))
            break;
    }
    req[got] = '\0';
    bool is_get = strncmp(req, "GET ", 4) == 0 || strncmp(req, "HEAD ", 5) == 0;
    const char *path = strchr(req, ' ');
    path = path ? path + 1 : "";
    bool metrics_path = strncmp(path, "/metrics", 8) == 0 && (path[8] == ' ' || path[8] == '?');
    if (!is_get) {
        static const char msg[] = "only GET is served\n";
        respond(fd, "405 Method Not Allowed", "text/plain", msg, sizeof msg - 1);
        return;
    }
    if (!metrics_path) {
        static const char msg[] = "not found: try /metrics\n";
        respond(fd, "404 Not Found", "text/plain", msg, sizeof msg - 1);
        return;
    }
    char *body = NULL;
    size_t len = 0;
    if (metrics_render(&body, &len) != 0) {
        static const char msg[] = "out of memory\n";
        respond(fd, "500 Internal Server Error", "text/plain", msg, sizeof msg - 1);
        return;
    }
    respond(fd, "200 OK", "text/plain; version=0.0.4", body, strncmp(req, "HEAD ", 5) == 0 ? 0 : len);
    free(body);
}

static void *serve_thread(void *arg)
{
    struct metrics_http *s = arg;
    for (;;) {
        struct pollfd fds[2] = {{.fd = s->listen_fd, .events = POLLIN}, {.fd = s->stop_pipe[0], .events = POLLIN}};
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (fds[1].revents)
            break;
        if (!(fds[0].revents & POLLIN))
            continue;
        int fd = accept(s->listen_fd, NULL, NULL);
        if (fd < 0)
            continue;
        serve_one(fd);
        close(fd);
    }
    return NULL;
}

static int split_host_port(const char *listen, char *host, size_t hostlen, char *port, size_t portlen)
{
    const char *colon = strrchr(listen, ':');
    if (!colon || !colon[1])
        return -1;
    const char *h = listen;
    size_t hl = (size_t)(colon - listen);
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
        h++;
        hl -= 2;
    }
    if (hl >= hostlen || strlen(colon + 1) >= portlen)
        return -1;
    memcpy(host, h, hl);
    host[hl] = '\0';
    snprintf(port, portlen, "%s", colon + 1);
    return 0;
}

int metrics_http_start(const char *address, struct metrics_http **out, char *err, size_t errlen)
{
    char host[256], port[16];
    *out = NULL;
    if (split_host_port(address, host, sizeof host, port, sizeof port) != 0) {
        snprintf(err, errlen, "metrics.http.listener '%s' is not host:port", address);
        return -1;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
    if (rc != 0) {
        snprintf(err, errlen, "metrics.http.listener '%s': %s", address, gai_strerror(rc));
        return -1;
    }
    int fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 16) != 0) {
        snprintf(err, errlen, "metrics.http.listener '%s': cannot listen: %s", address, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(res);
        return -1;
    }
    freeaddrinfo(res);
    struct metrics_http *s = calloc(1, sizeof *s);
    if (!s || pipe2(s->stop_pipe, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "metrics.http.listener: out of resources");
        free(s);
        close(fd);
        return -1;
    }
    s->listen_fd = fd;
    struct sockaddr_storage addr;
    socklen_t alen = sizeof addr;
    getsockname(fd, (struct sockaddr *)&addr, &alen);
    s->port = addr.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&addr)->sin6_port)
                                         : ntohs(((struct sockaddr_in *)&addr)->sin_port);
    if (pthread_create(&s->thread, NULL, serve_thread, s) != 0) {
        snprintf(err, errlen, "metrics.http.listener: cannot start its thread");
        close(s->stop_pipe[0]);
        close(s->stop_pipe[1]);
        close(fd);
        free(s);
        return -1;
    }
    logger_info("metrics", "serving /metrics on %s (port %d)", address, s->port);
    *out = s;
    return 0;
}

int metrics_http_port(const struct metrics_http *server)
{
    return server ? server->port : -1;
}

void metrics_http_stop(struct metrics_http *server)
{
    if (!server)
        return;
    ssize_t n = write(server->stop_pipe[1], "x", 1);
    (void)n;
    pthread_join(server->thread, NULL);
    close(server->stop_pipe[0]);
    close(server->stop_pipe[1]);
    close(server->listen_fd);
    free(server);
}
