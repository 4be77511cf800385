/* GET /metrics served by libmicrohttpd on its own polling thread: sockets
 * are non-blocking and watched with epoll, so several scrapers are served
 * at once and one that sends slowly, or never reads its answer, holds only
 * its own connection (closed after METRICS_HTTP_TIMEOUT_S idle seconds). */
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "metrics/metrics.h"
#include "util/logger.h"

/* Bounds on what scrapers can hold: connections at once, memory each for
 * the request head, and idle seconds before a connection is closed. */
#define METRICS_HTTP_MAX_CONNECTIONS 64
#define METRICS_HTTP_CONNECTION_MEMORY (32 * 1024)
#define METRICS_HTTP_TIMEOUT_S 10

/* Created and stopped by the main thread; the daemon's thread serves. */
struct metrics_http {
    struct MHD_Daemon *daemon;
    int port;
};

static enum MHD_Result answer(struct MHD_Connection *connection, unsigned int status, const char *type, void *body,
                              size_t len, enum MHD_ResponseMemoryMode mode)
{
    struct MHD_Response *response = MHD_create_response_from_buffer(len, body, mode);
    if (!response) {
        if (mode == MHD_RESPMEM_MUST_FREE)
            free(body);
        return MHD_NO;
    }
    /* One answer per connection, as Prometheus expects of a plain exporter. */
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result queued = MHD_queue_response(connection, status, response);
    MHD_destroy_response(response);
    return queued;
}

static enum MHD_Result serve_request(void *cls, struct MHD_Connection *connection, const char *url, const char *method,
                                     const char *version, const char *upload_data, size_t *upload_data_size,
                                     void **request_state)
{
    (void)cls;
    (void)version;
    (void)upload_data;
    (void)upload_data_size;
    (void)request_state;
    bool is_get = strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
    if (!is_get) {
        static char msg[] = "only GET is served\n";
        return answer(connection, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", msg, sizeof msg - 1,
                      MHD_RESPMEM_PERSISTENT);
    }
    if (strcmp(url, "/metrics") != 0) {
        static char msg[] = "not found: try /metrics\n";
        return answer(connection, MHD_HTTP_NOT_FOUND, "text/plain", msg, sizeof msg - 1, MHD_RESPMEM_PERSISTENT);
    }
    char *body = NULL;
    size_t len = 0;
    if (metrics_render(&body, &len) != 0) {
        static char msg[] = "out of memory\n";
        return answer(connection, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain", msg, sizeof msg - 1,
                      MHD_RESPMEM_PERSISTENT);
    }
    return answer(connection, MHD_HTTP_OK, "text/plain; version=0.0.4", body, len, MHD_RESPMEM_MUST_FREE);
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
    if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 64) != 0) {
        snprintf(err, errlen, "metrics.http.listener '%s': cannot listen: %s", address, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(res);
        return -1;
    }
    freeaddrinfo(res);
    struct metrics_http *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "metrics.http.listener: out of memory");
        close(fd);
        return -1;
    }
    struct sockaddr_storage addr;
    socklen_t alen = sizeof addr;
    getsockname(fd, (struct sockaddr *)&addr, &alen);
    s->port = addr.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&addr)->sin6_port)
                                         : ntohs(((struct sockaddr_in *)&addr)->sin_port);
    /* The daemon takes the listening socket and closes it when stopped. */
    s->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, 0, NULL, NULL, serve_request, NULL,
                                 MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT,
                                 (unsigned int)METRICS_HTTP_MAX_CONNECTIONS, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                                 (size_t)METRICS_HTTP_CONNECTION_MEMORY, MHD_OPTION_CONNECTION_TIMEOUT,
                                 (unsigned int)METRICS_HTTP_TIMEOUT_S, MHD_OPTION_END);
    if (!s->daemon) {
        snprintf(err, errlen, "metrics.http.listener '%s': cannot start the HTTP server", address);
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
    MHD_stop_daemon(server->daemon);
    free(server);
}
