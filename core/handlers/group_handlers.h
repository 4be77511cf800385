/* Helpers shared by the group API handlers (group_*.c, offset_*.c):
 * copying between wire strings and the coordinator's C strings. */
#ifndef CAIRN_HANDLERS_GROUP_HANDLERS_H
#define CAIRN_HANDLERS_GROUP_HANDLERS_H

#include <stdio.h>
#include <string.h>

#include "handlers/handler_util.h"
#include "net/server.h"

/* A NUL-terminated copy in the request arena; NULL for a null string (or
 * when out of memory, which callers treat like null). */
static inline char *group_handler_cstr(struct request_context *ctx, struct kafka_str s)
{
    if (s.len < 0 || !s.data)
        return NULL;
    char *out = kafka_arena_alloc(&ctx->arena, (size_t)s.len + 1);
    if (!out)
        return NULL;
    memcpy(out, s.data, (size_t)s.len);
    out[s.len] = '\0';
    return out;
}

/* As group_handler_cstr, but "" for null. */
static inline const char *group_handler_cstr_or_empty(struct request_context *ctx, struct kafka_str s)
{
    char *c = group_handler_cstr(ctx, s);
    return c ? c : "";
}

/* Wire string copied into the arena (the source is borrowed). */
static inline struct kafka_str group_handler_str(struct request_context *ctx, const char *s)
{
    if (!s)
        return (struct kafka_str){NULL, -1};
    return kafka_arena_strdup(&ctx->arena, s);
}

static inline struct kafka_bytes group_handler_bytes(struct request_context *ctx, const uint8_t *p, size_t n)
{
    uint8_t *out = kafka_arena_alloc(&ctx->arena, n ? n : 1);
    if (!out)
        return (struct kafka_bytes){(const uint8_t *)"", 0};
    if (n)
        memcpy(out, p, n);
    return (struct kafka_bytes){out, (int32_t)n};
}

/* Kafka reports a member's host as "/<address>". */
static inline const char *group_handler_client_host(struct request_context *ctx)
{
    char host[80];
    const char *peer = ctx->net->peer;
    const char *colon = strrchr(peer, ':');
    size_t n = colon ? (size_t)(colon - peer) : strlen(peer);
    if (n > 0 && peer[0] == '[' && peer[n - 1] == ']') {
        peer++;
        n -= 2;
    }
    snprintf(host, sizeof host, "/%.*s", (int)n, peer);
    char *out = kafka_arena_alloc(&ctx->arena, strlen(host) + 1);
    if (out)
        memcpy(out, host, strlen(host) + 1);
    return out ? out : "";
}

#endif
