/* How the outbound client's bytes reach a node's socket. The client calls
 * these operations for every connection; the plain TCP table is built in,
 * and a TLS layer (tls/tls.h: tls_client_*) supplies another one through
 * net_client_config.transport_ops.
 *
 * Threads: a transport is embedded in one node of one client and every
 * operation runs on that client's loop thread. `ctx` is shared by all the
 * client's connections (read-only to the operations) and must outlive the
 * client. */
#ifndef CAIRN_NET_CLIENT_TRANSPORT_H
#define CAIRN_NET_CLIENT_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

struct client_transport;

/* Each operation returns a byte count or 0, "would block" as -EAGAIN,
 * and a failure as another negative errno (with `error` filled when the
 * errno alone would not say why, e.g. a refused certificate). */
struct client_transport_ops {
    const char *name; /* "plaintext", "ssl"; for log lines */
    /* Starts a non-blocking connect; 0 (in progress or done) or -errno. */
    int (*connect)(struct client_transport *t, const struct sockaddr *addr, socklen_t addrlen);
    /* Once the socket is ready: 0 when connected (and any handshake done),
     * -EAGAIN to wait for more readiness (see wants_write), -errno on
     * failure. */
    int (*finish_connect)(struct client_transport *t);
    ssize_t (*read)(struct client_transport *t, void *buf, size_t len);
    ssize_t (*writev)(struct client_transport *t, const struct iovec *iov, int iovcnt);
    /* Frees the state and closes the socket. */
    void (*close)(struct client_transport *t);
    /* Optional (NULL: the connect is only waiting for writability). While
     * finish_connect returns -EAGAIN: true to wait for writability, false
     * for readability (a handshake waiting for the server's flight). */
    bool (*wants_write)(struct client_transport *t);
    /* Optional. Bytes already taken off the socket and not yet read (TLS
     * plaintext), which socket readiness will not announce. */
    size_t (*pending)(struct client_transport *t);
};

struct client_transport {
    const struct client_transport_ops *ops;
    int fd;           /* -1 when closed; polled by the connection */
    void *state;      /* this connection's (NULL for plain TCP) */
    void *ctx;        /* net_client_config.transport_ctx */
    const char *host; /* the node's host, as given to net_client_add_node */
    int port;
    unsigned failures; /* consecutive setup failures; kept across attempts */
    char error[256];   /* why the last setup failed, when errno says too little */
};

extern const struct client_transport_ops client_plain_transport;

#endif
