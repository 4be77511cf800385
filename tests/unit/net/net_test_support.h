/* Shared helpers for the network layer tests: a scripted request handler,
 * a delayed-completion thread (a stand-in for a purgatory) and blocking
 * client sockets. Each test file includes this once. */
#ifndef CAIRN_TEST_NET_SUPPORT_H
#define CAIRN_TEST_NET_SUPPORT_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "net/server.h"
#include "protocol/wire.h"
#include "util/clock.h"

/* Request layout used by the tests: int32 correlation id, int8 command,
 * then command arguments. Responses: int32 size, int32 correlation id, body. */
enum test_command {
    TEST_CMD_ECHO = 0,     /* body = the rest of the request */
    TEST_CMD_SPLICE = 1,   /* args: int32 pos1, int32 len1, int32 pos2, int32 len2 */
    TEST_CMD_LATER = 2,    /* args: int32 delay_ms; echo completed from another thread */
    TEST_CMD_THROTTLE = 3, /* args: int32 throttle_ms; empty body */
    TEST_CMD_SLOW = 4,     /* args: int32 sleep_ms; echo after sleeping on the io thread */
    TEST_CMD_NO_RESPONSE = 5,
    TEST_CMD_CLOSE = 6, /* echo, then close */
};

struct test_parked {
    struct net_request *req;
    int64_t due_ms;
    struct test_parked *next;
};

/* Shared between the test thread, io threads and the completer thread;
 * guarded by mutex (counters are atomics). */
struct test_ctx {
    int splice_fd; /* file used by TEST_CMD_SPLICE; dup()ed per response */
    atomic_int handled;
    atomic_int cancelled; /* cancel hooks run (TEST_CMD_LATER sets one) */
    atomic_int max_concurrent, concurrent;
    pthread_mutex_t mutex;
    struct test_parked *parked;
    bool completer_stop;
    pthread_t completer;
};

static inline uint32_t test_be32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static inline void test_put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* The body (after the correlation id) TEST_CMD_SPLICE sends for file
 * regions (pos1, len1) and (pos2, len2) of content; returns its length. */
static inline size_t test_splice_body(uint8_t *out, const uint8_t *content, int32_t pos1, int32_t len1, int32_t pos2,
                                      int32_t len2)
{
    size_t at = 0;
    memcpy(out + at, "HDR", 3), at += 3;
    test_put_be32(out + at, (uint32_t)len1), at += 4;
    memcpy(out + at, content + pos1, (size_t)len1), at += (size_t)len1;
    memcpy(out + at, "MID", 3), at += 3;
    test_put_be32(out + at, (uint32_t)len2), at += 4;
    memcpy(out + at, content + pos2, (size_t)len2), at += (size_t)len2;
    memcpy(out + at, "END", 3), at += 3;
    return at;
}

static inline void test_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Builds size prefix + correlation id + body into a fresh writer. */
static inline void test_echo_response(struct kafka_writer *w, const struct net_request *req)
{
    kafka_writer_init(w, req->frame_len + 8);
    size_t size_at = kafka_writer_reserve(w, 4);
    kafka_write_raw(w, req->frame, 4);
    if (req->frame_len > 5)
        kafka_write_raw(w, req->frame + 5, req->frame_len - 5);
    kafka_writer_patch_int32(w, size_at, (int32_t)(w->len - 4));
}

static inline int32_t test_arg(const struct net_request *req, int index)
{
    size_t at = 5 + (size_t)index * 4;
    if (req->frame_len < at + 4)
        return 0;
    return (int32_t)test_be32(req->frame + at);
}

static inline void *test_completer_main(void *arg)
{
    struct test_ctx *ctx = arg;
    pthread_mutex_lock(&ctx->mutex);
    for (;;) {
        int64_t now = clock_mono_ms();
        struct test_parked **pp = &ctx->parked;
        struct test_parked *due = NULL;
        while (*pp) {
            if ((*pp)->due_ms <= now) {
                due = *pp;
                *pp = due->next;
                break;
            }
            pp = &(*pp)->next;
        }
        if (due) {
            pthread_mutex_unlock(&ctx->mutex);
            struct kafka_writer w;
            test_echo_response(&w, due->req);
            net_request_complete(due->req, &w, 0, false);
            free(due);
            pthread_mutex_lock(&ctx->mutex);
            continue;
        }
        if (ctx->completer_stop && !ctx->parked)
            break;
        pthread_mutex_unlock(&ctx->mutex);
        test_sleep_ms(2);
        pthread_mutex_lock(&ctx->mutex);
    }
    pthread_mutex_unlock(&ctx->mutex);
    return NULL;
}

static inline void test_count_cancel(void *arg)
{
    struct test_ctx *ctx = arg;
    atomic_fetch_add(&ctx->cancelled, 1);
}

static inline void test_handler(struct net_request *req, void *arg)
{
    struct test_ctx *ctx = arg;
    int now_running = atomic_fetch_add(&ctx->concurrent, 1) + 1;
    int seen = atomic_load(&ctx->max_concurrent);
    while (now_running > seen && !atomic_compare_exchange_weak(&ctx->max_concurrent, &seen, now_running))
        ;
    int command = req->frame_len >= 5 ? req->frame[4] : TEST_CMD_ECHO;
    struct kafka_writer w;
    switch (command) {
    case TEST_CMD_SPLICE: {
        kafka_writer_init(&w, 64);
        size_t size_at = kafka_writer_reserve(&w, 4);
        kafka_write_raw(&w, req->frame, 4);
        kafka_write_raw(&w, "HDR", 3);
        kafka_write_records(&w, &(struct kafka_records){NULL, test_arg(req, 1), dup(ctx->splice_fd), test_arg(req, 0)});
        kafka_write_raw(&w, "MID", 3);
        kafka_write_records(&w, &(struct kafka_records){NULL, test_arg(req, 3), dup(ctx->splice_fd), test_arg(req, 2)});
        kafka_write_raw(&w, "END", 3);
        kafka_writer_patch_int32(&w, size_at, (int32_t)(kafka_writer_total_len(&w) - 4));
        atomic_fetch_sub(&ctx->concurrent, 1);
        atomic_fetch_add(&ctx->handled, 1);
        net_request_complete(req, &w, 0, false);
        return;
    }
    case TEST_CMD_LATER: {
        struct test_parked *p = calloc(1, sizeof(*p));
        p->req = req;
        p->due_ms = clock_mono_ms() + test_arg(req, 0);
        net_request_set_cancel(req, test_count_cancel, ctx);
        atomic_fetch_sub(&ctx->concurrent, 1);
        atomic_fetch_add(&ctx->handled, 1);
        pthread_mutex_lock(&ctx->mutex);
        p->next = ctx->parked;
        ctx->parked = p;
        pthread_mutex_unlock(&ctx->mutex);
        return;
    }
    case TEST_CMD_SLOW:
        test_sleep_ms(test_arg(req, 0));
        break;
    default:
        break;
    }
    atomic_fetch_sub(&ctx->concurrent, 1);
    atomic_fetch_add(&ctx->handled, 1);
    if (command == TEST_CMD_NO_RESPONSE) {
        net_request_complete(req, NULL, 0, false);
        return;
    }
    test_echo_response(&w, req);
    int32_t throttle = command == TEST_CMD_THROTTLE ? test_arg(req, 0) : 0;
    net_request_complete(req, &w, throttle, command == TEST_CMD_CLOSE);
}

static inline void test_ctx_init(struct test_ctx *ctx)
{
    memset(ctx, 0, sizeof(*ctx));
    ctx->splice_fd = -1;
    pthread_mutex_init(&ctx->mutex, NULL);
    pthread_create(&ctx->completer, NULL, test_completer_main, ctx);
}

/* Completes whatever is still parked, then joins the completer. */
static inline void test_ctx_finish(struct test_ctx *ctx)
{
    pthread_mutex_lock(&ctx->mutex);
    ctx->completer_stop = true;
    pthread_mutex_unlock(&ctx->mutex);
    pthread_join(ctx->completer, NULL);
    pthread_mutex_destroy(&ctx->mutex);
    if (ctx->splice_fd >= 0)
        close(ctx->splice_fd);
}

static inline void test_config(struct net_config *cfg)
{
    net_config_defaults(cfg);
    snprintf(cfg->listeners[0].host, sizeof(cfg->listeners[0].host), "127.0.0.1");
    cfg->listeners[0].port = 0;
    cfg->num_network_threads = 2;
    cfg->num_io_threads = 4;
}

static inline int test_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in sin;
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t)port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0) {
        close(fd);
        return -1;
    }
    struct timeval tv = {10, 0}; /* a hung test fails instead of blocking forever */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static inline int test_send_all(int fd, const void *data, size_t len)
{
    const uint8_t *p = data;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* 0 on success, -1 on EOF, reset or timeout. */
static inline int test_recv_all(int fd, void *data, size_t len)
{
    uint8_t *p = data;
    while (len > 0) {
        ssize_t n = recv(fd, p, len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Builds a request frame (size prefix included) into buf; returns its length. */
static inline size_t test_build_request(uint8_t *buf, int32_t correlation_id, int command, const int32_t *args,
                                        int arg_count, const void *payload, size_t payload_len)
{
    size_t len = 4;
    test_put_be32(buf + len, (uint32_t)correlation_id);
    len += 4;
    buf[len++] = (uint8_t)command;
    for (int i = 0; i < arg_count; i++) {
        test_put_be32(buf + len, (uint32_t)args[i]);
        len += 4;
    }
    if (payload_len > 0)
        memcpy(buf + len, payload, payload_len);
    len += payload_len;
    test_put_be32(buf, (uint32_t)(len - 4));
    return len;
}

static inline int test_send_request(int fd, int32_t correlation_id, int command, const int32_t *args, int arg_count)
{
    uint8_t buf[64];
    size_t len = test_build_request(buf, correlation_id, command, args, arg_count, NULL, 0);
    return test_send_all(fd, buf, len);
}

/* Reads one response; returns its body length after the correlation id
 * (the body is stored in body when it fits), or -1 on EOF/error. */
static inline int64_t test_read_response(int fd, int32_t *correlation_id, uint8_t *body, size_t body_cap)
{
    uint8_t head[8];
    if (test_recv_all(fd, head, 8) != 0)
        return -1;
    int64_t size = (int32_t)test_be32(head);
    if (size < 4)
        return -1;
    *correlation_id = (int32_t)test_be32(head + 4);
    size_t body_len = (size_t)size - 4;
    if (body_len > body_cap)
        return -1;
    if (body_len > 0 && test_recv_all(fd, body, body_len) != 0)
        return -1;
    return (int64_t)body_len;
}

/* true when the server closed the connection (EOF or reset) within the
 * socket's receive timeout. */
static inline bool test_wait_closed(int fd)
{
    uint8_t byte;
    for (;;) {
        ssize_t n = recv(fd, &byte, 1, 0);
        if (n == 0)
            return true;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno == ECONNRESET;
    }
}

#endif
