/* The write path: a response is its buffer bytes interleaved with file
 * regions (splices). Buffer pieces go out with the transport's send, file
 * regions with its send_file (send() and sendfile() for the plain one); on
 * EAGAIN the position is kept exactly where it stopped. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "net/net_internal.h"
#include "util/clock.h"
#include "util/logger.h"

static bool response_is_valid(const struct kafka_writer *w, char *why, size_t whylen)
{
    if (w->failed) {
        snprintf(why, whylen, "the response could not be built");
        return false;
    }
    if (w->len > 0 && !w->buf) {
        snprintf(why, whylen, "response buffer missing");
        return false;
    }
    if (w->splice_count > 0 && !w->splices) {
        snprintf(why, whylen, "response splices missing");
        return false;
    }
    size_t prev_at = 0;
    for (size_t i = 0; i < w->splice_count; i++) {
        const struct kafka_splice *s = &w->splices[i];
        if (s->at < prev_at || s->at > w->len || s->len < 0 || s->pos < 0 || (s->len > 0 && s->fd < 0)) {
            snprintf(why, whylen, "splice %zu is malformed (at %zu, len %" PRId32 ")", i, s->at, s->len);
            return false;
        }
        prev_at = s->at;
    }
    return true;
}

int net_connection_set_response(struct net_connection *c, struct kafka_writer *response)
{
    char why[128];
    if (!response_is_valid(response, why, sizeof(why))) {
        logger_warn(NET_LOG, "connection %" PRIu64 " (%s): dropping response: %s", c->id, c->peer, why);
        kafka_writer_free(response);
        memset(response, 0, sizeof(*response));
        return -1;
    }
    c->out = *response;
    memset(response, 0, sizeof(*response));
    c->out_active = true;
    c->response_started_ms = clock_mono_ms();
    c->out_pos = 0;
    c->out_splice = 0;
    c->out_splice_sent = 0;
    return 0;
}

void net_connection_drop_response(struct net_connection *c)
{
    if (!c->out_active)
        return;
    kafka_writer_free(&c->out);
    memset(&c->out, 0, sizeof(c->out));
    c->out_active = false;
}

/* -1 error (logged), 0 would block, else bytes written. */
static ssize_t write_result(struct net_connection *c, ssize_t n, const char *what)
{
    if (n >= 0)
        return n;
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        return 0;
    if (errno != EPIPE && errno != ECONNRESET)
        logger_warn(NET_LOG, "%s to connection %" PRIu64 " (%s): %s", what, c->id, c->peer, strerror(errno));
    return -1;
}

int net_connection_write(struct net_connection *c)
{
    struct kafka_writer *w = &c->out;
    size_t budget = NET_IO_BUDGET_BYTES;

    while (budget > 0) {
        size_t next_at = c->out_splice < w->splice_count ? w->splices[c->out_splice].at : w->len;
        if (c->out_pos < next_at) {
            size_t n = next_at - c->out_pos;
            if (n > budget)
                n = budget;
            /* MORE lets a small header share a segment with the file
             * bytes that follow it. */
            int flags = c->out_splice < w->splice_count ? NET_TRANSPORT_MORE : 0;
            struct iovec iov = {w->buf + c->out_pos, n};
            ssize_t sent = write_result(c, c->transport.ops->send(&c->transport, &iov, 1, flags), "send");
            if (sent < 0)
                return -1;
            if (sent == 0)
                return 1;
            c->out_pos += (size_t)sent;
            c->last_activity_ms = clock_mono_ms();
            budget -= (size_t)sent;
            c->last_activity_ms = clock_mono_ms();
            continue;
        }
        if (c->out_splice == w->splice_count)
            return 0;

        const struct kafka_splice *s = &w->splices[c->out_splice];
        int64_t remaining = s->len - c->out_splice_sent;
        if (remaining == 0) {
            c->out_splice++;
            c->out_splice_sent = 0;
            continue;
        }
        size_t n = remaining < (int64_t)budget ? (size_t)remaining : budget;
        int64_t offset = s->pos + c->out_splice_sent;
        ssize_t sent = c->transport.ops->send_file(&c->transport, s->fd, offset, n);
        if (sent == 0 && n > 0) {
            /* The file is shorter than the region promised: the frame can
             * no longer be completed, so the stream is unusable. */
            logger_warn(NET_LOG,
                        "connection %" PRIu64 " (%s): file region ended early (fd %d, pos %" PRId64 ", %" PRId64
                        " bytes missing)",
                        c->id, c->peer, s->fd, offset, remaining);
            return -1;
        }
        sent = write_result(c, sent, "sendfile");
        if (sent < 0)
            return -1;
        if (sent == 0)
            return 1;
        c->out_splice_sent += sent;
        c->last_activity_ms = clock_mono_ms();
        budget -= (size_t)sent;
        c->last_activity_ms = clock_mono_ms();
    }
    return 1;
}
