/* Small helpers shared by the API handlers. All run on io threads. */
#ifndef CAIRN_HANDLERS_HANDLER_UTIL_H
#define CAIRN_HANDLERS_HANDLER_UTIL_H

#include "handlers/handlers.h"

struct metadata_broker;
struct metadata_endpoint;
struct metadata_topic;
struct partition_log;

/* The endpoint of broker b that clients of this request's listener should
 * use: the one with the same listener name, else the first; NULL if none. */
const struct metadata_endpoint *handler_endpoint_for_request(struct request_context *ctx,
                                                             const struct metadata_broker *b);

/* Copies n int32s into the request arena (NULL when n <= 0 or out of memory). */
int32_t *handler_copy_int32s(struct request_context *ctx, const int32_t *src, int32_t n);

/* KAFKA_ERR_NONE for a legal topic name (1-249 chars of [a-zA-Z0-9._-], not "." or ".."),
 * otherwise KAFKA_ERR_INVALID_TOPIC_EXCEPTION. */
int16_t handler_topic_name_error(struct kafka_str name);

/* Creates a topic with the broker defaults (auto.create.topics.enable path). */
int16_t handler_auto_create_topic(struct request_context *ctx, const char *name);

/* The local log of a partition this broker leads. Returns KAFKA_ERR_NONE and
 * a new reference to the log (release it with partition_log_close), or
 * UNKNOWN_TOPIC_OR_PARTITION, or NOT_LEADER_OR_FOLLOWER. */
int16_t handler_leader_log(struct request_context *ctx, const struct metadata_topic *topic,
                           int32_t partition, struct partition_log **log_out);

/* The high watermark of a partition this broker leads. With a single
 * in-sync replica it is the log end offset. */
int64_t handler_high_watermark(struct partition_log *log);

/* Allocates an array of n response structs in the request arena and runs the
 * generated init on each, so every field starts at its schema default (an
 * all-zero struct is not: defaults such as -1 matter when encoding). ptr is
 * NULL on allocation failure. */
#define HANDLER_NEW_ARRAY(ctx, ptr, n, init_fn)                                                       \
    do {                                                                                              \
        int32_t handler_n_ = (n) > 0 ? (n) : 0;                                                       \
        (ptr) = kafka_arena_alloc(&(ctx)->arena, (size_t)(handler_n_ + 1) * sizeof *(ptr));           \
        for (int32_t handler_i_ = 0; (ptr) && handler_i_ < handler_n_; handler_i_++)                  \
            init_fn(&(ptr)[handler_i_]);                                                              \
    } while (0)

#endif
