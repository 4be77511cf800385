/* The plain transport: the socket syscalls themselves, nothing buffered. */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>

#include "net/net_internal.h"

static ssize_t plain_recv(struct net_transport *t, void *buf, size_t len)
{
    return recv(t->fd, buf, len, 0);
}

static ssize_t plain_send(struct net_transport *t, const struct iovec *iov, int iovcnt, int flags)
{
    struct msghdr msg;
    memset(&msg, 0, sizeof(msg));
    msg.msg_iov = (struct iovec *)iov;
    msg.msg_iovlen = (size_t)iovcnt;
    return sendmsg(t->fd, &msg, MSG_NOSIGNAL | ((flags & NET_TRANSPORT_MORE) ? MSG_MORE : 0));
}

static ssize_t plain_send_file(struct net_transport *t, int file_fd, int64_t pos, size_t len)
{
    off_t offset = (off_t)pos;
    return sendfile(t->fd, file_fd, &offset, len);
}

const struct net_transport_ops net_plain_transport_ops = {
    .name = "plaintext",
    .recv = plain_recv,
    .send = plain_send,
    .send_file = plain_send_file,
    .pending = NULL,
    .close = NULL,
};

void net_transport_release(const struct net_transport_ops *ops, void *state, int fd)
{
    if (!ops || !ops->close)
        return;
    struct net_transport t = {ops, state, fd};
    ops->close(&t);
}

void net_format_peer(int fd, char *out, size_t outlen)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    char host[INET6_ADDRSTRLEN] = "?";
    snprintf(out, outlen, "unknown");
    if (getpeername(fd, (struct sockaddr *)&ss, &len) != 0)
        return;
    if (ss.ss_family == AF_INET) {
        struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
        inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
        snprintf(out, outlen, "%s:%u", host, ntohs(sin->sin_port));
    } else if (ss.ss_family == AF_INET6) {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
        inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host));
        snprintf(out, outlen, "[%s]:%u", host, ntohs(sin6->sin6_port));
    }
}
