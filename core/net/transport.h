/* How a connection's bytes reach its socket. Every read and write of a
 * connection goes through its transport's operations: the plain transport
 * calls recv/sendmsg/sendfile directly; a TLS layer installs its own
 * operations (and state) for the connections of its listeners, and may
 * replace them on a live connection, e.g. once its handshake is done.
 *
 * Threads: a transport is owned by its connection's network loop thread;
 * every operation runs there, never concurrently for one connection. */
#ifndef CAIRN_NET_TRANSPORT_H
#define CAIRN_NET_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct net_transport;

/* More bytes of the same response follow (the plain transport sends with
 * MSG_MORE so a small header can share a segment with file bytes). */
#define NET_TRANSPORT_MORE 1

/* Each operation follows the syscall it replaces: a byte count, or -1 with
 * errno set (EAGAIN/EWOULDBLOCK: try again once the socket is ready). */
struct net_transport_ops {
    const char *name; /* "plaintext"; for log lines */
    /* Like recv(): 0 means the peer closed the stream. */
    ssize_t (*recv)(struct net_transport *t, void *buf, size_t len);
    /* Like sendmsg() on iov[0..iovcnt); flags is 0 or NET_TRANSPORT_MORE. */
    ssize_t (*send)(struct net_transport *t, const struct iovec *iov, int iovcnt, int flags);
    /* Like sendfile(): sends up to len bytes of file_fd from pos; 0 when the
     * file ends before pos (the caller treats that as an error). */
    ssize_t (*send_file)(struct net_transport *t, int file_fd, int64_t pos, size_t len);
    /* Bytes the transport already took off the socket and holds (e.g.
     * decrypted records), which socket readiness will not announce. NULL
     * for a transport that never holds any. */
    size_t (*pending)(struct net_transport *t);
    /* Frees the state. Called once, while the socket is still open (a TLS
     * layer may try a close_notify), when the connection closes or when the
     * transport is replaced. NULL when there is nothing to free. */
    void (*close)(struct net_transport *t);
    /* Optional (NULL = never). True while recv cannot progress until the
     * socket is writable (a TLS handshake flight that did not fit the send
     * buffer): the connection then polls for writability and calls recv. */
    bool (*wants_write)(struct net_transport *t);
    /* Optional. clock_mono_ms() time by which the transport must be done
     * with its setup (a TLS handshake), or 0 for none; the loop closes a
     * connection past it, whatever else it sends. */
    int64_t (*deadline_ms)(struct net_transport *t);
    /* Optional. Once, after setup established who the peer is (a verified
     * client certificate), fills type and name and returns 1; the
     * connection then acts as that principal. 0 otherwise. */
    int (*peer_principal)(struct net_transport *t, char *type, size_t type_len, char *name, size_t name_len);
};

/* Embedded in each connection. An operation may change ops and state
 * itself (a handshake transport becoming the steady-state one, as nginx
 * swaps c->recv/c->send after its SSL handshake). */
struct net_transport {
    const struct net_transport_ops *ops;
    void *state; /* the transport's; freed by ops->close */
    int fd;      /* the connection's socket; never closed by a transport */
};

/* recv/sendmsg/sendfile on the socket; its state is NULL. */
extern const struct net_transport_ops net_plain_transport_ops;

/* A listener's transport factory: runs on the loop thread as a connection
 * of that listener opens, after t holds the plain transport. It may install
 * its own ops and state; returning -1 refuses (closes) the connection. */
typedef int (*net_transport_init_fn)(void *ctx, struct net_transport *t);

/* "127.0.0.1:53422" or "[::1]:53422" for a connected socket; "unknown"
 * when the peer cannot be named. */
void net_format_peer(int fd, char *out, size_t outlen);

#endif
