/* Plain TCP transport of the outbound client: the only place its socket
 * bytes are read and written. A TLS transport replaces this ops table. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "net/client_internal.h"

static int plain_connect(struct client_transport *t, const struct sockaddr *addr, socklen_t addrlen)
{
    int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, addr, addrlen) != 0 && errno != EINPROGRESS) {
        int e = errno;
        close(fd);
        return -e;
    }
    t->fd = fd;
    return 0;
}

static int plain_finish_connect(struct client_transport *t)
{
    int soerr = 0;
    socklen_t len = sizeof soerr;
    if (getsockopt(t->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0)
        return -errno;
    return soerr ? -soerr : 0;
}

static ssize_t plain_read(struct client_transport *t, void *buf, size_t len)
{
    for (;;) {
        ssize_t n = recv(t->fd, buf, len, 0);
        if (n >= 0)
            return n;
        if (errno == EINTR)
            continue;
        return errno == EWOULDBLOCK ? -EAGAIN : -errno;
    }
}

static ssize_t plain_writev(struct client_transport *t, const struct iovec *iov, int iovcnt)
{
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = (struct iovec *)iov;
    msg.msg_iovlen = (size_t)iovcnt;
    for (;;) {
        /* MSG_NOSIGNAL: a peer that went away is an error value, not SIGPIPE. */
        ssize_t n = sendmsg(t->fd, &msg, MSG_NOSIGNAL);
        if (n >= 0)
            return n;
        if (errno == EINTR)
            continue;
        return errno == EWOULDBLOCK ? -EAGAIN : -errno;
    }
}

static void plain_close(struct client_transport *t)
{
    if (t->fd >= 0)
        close(t->fd);
    t->fd = -1;
}

const struct client_transport_ops client_plain_transport = {
    .name = "plaintext",
    .connect = plain_connect,
    .finish_connect = plain_finish_connect,
    .read = plain_read,
    .writev = plain_writev,
    .close = plain_close,
};
