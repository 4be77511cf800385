#include "handlers/handler_util.h"

#include <string.h>

#include "log/log_manager.h"
#include "log/partition_log.h"
#include "metadata/metadata_image.h"
#include "metadata/metadata_store.h"
#include "net/server.h"
#include "util/logger.h"

int32_t *handler_copy_int32s(struct request_context *ctx, const int32_t *src, int32_t n)
{
    if (n <= 0) return NULL;
    int32_t *out = kafka_arena_alloc(&ctx->arena, (size_t)n * sizeof *out);
    if (out) memcpy(out, src, (size_t)n * sizeof *out);
    return out;
}

const struct metadata_endpoint *handler_endpoint_for_request(struct request_context *ctx,
                                                             const struct metadata_broker *b)
{
    const char *listener = ctx->net->listener_name;
    for (int32_t i = 0; listener && i < b->endpoint_count; i++)
        if (strcmp(b->endpoints[i].listener, listener) == 0) return &b->endpoints[i];
    return b->endpoint_count > 0 ? &b->endpoints[0] : NULL;
}

int16_t handler_topic_name_error(struct kafka_str name)
{
    if (name.len <= 0 || name.len > 249) return KAFKA_ERR_INVALID_TOPIC_EXCEPTION;
    if ((name.len == 1 && name.data[0] == '.') || (name.len == 2 && !memcmp(name.data, "..", 2)))
        return KAFKA_ERR_INVALID_TOPIC_EXCEPTION;
    for (int32_t i = 0; i < name.len; i++) {
        char c = name.data[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                  c == '_' || c == '-';
        if (!ok) return KAFKA_ERR_INVALID_TOPIC_EXCEPTION;
    }
    return KAFKA_ERR_NONE;
}

int16_t handler_auto_create_topic(struct request_context *ctx, const char *name)
{
    if (handler_topic_name_error(kafka_str_from_cstr(name)) != KAFKA_ERR_NONE)
        return KAFKA_ERR_INVALID_TOPIC_EXCEPTION;
    char err[256] = "";
    struct kafka_uuid id;
    int16_t code = metadata_create_topic(ctx->env->metadata, name, -1, -1, NULL, 0, NULL, 0, false, &id, err,
                                         sizeof err);
    if (code == KAFKA_ERR_NONE)
        logger_info("handlers", "auto-created topic '%s' with %d partitions for %s", name,
                    ctx->env->default_num_partitions, ctx->net->peer);
    else if (code != KAFKA_ERR_TOPIC_ALREADY_EXISTS)
        logger_warn("handlers", "auto-create of topic '%s' failed: %s", name, err);
    return code == KAFKA_ERR_TOPIC_ALREADY_EXISTS ? KAFKA_ERR_NONE : code;
}

int16_t handler_leader_log(struct request_context *ctx, const struct metadata_topic *topic,
                           int32_t partition, struct partition_log **log_out)
{
    *log_out = NULL;
    const struct metadata_partition *p = topic ? metadata_topic_partition(topic, partition) : NULL;
    if (!p || !p->present) return KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    if (p->leader != ctx->env->node_id) return KAFKA_ERR_NOT_LEADER_OR_FOLLOWER;
    struct partition_log *log = log_manager_get(ctx->env->logs, topic->name, partition);
    if (!log) return KAFKA_ERR_NOT_LEADER_OR_FOLLOWER;
    *log_out = log;
    return KAFKA_ERR_NONE;
}

int64_t handler_high_watermark(struct partition_log *log) { return partition_log_end_offset(log); }
