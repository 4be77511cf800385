#include "handlers/txn_handler_util.h"

#include <string.h>

#include "config/config.h"
#include "coordinator/coordinator_partition.h"
#include "group/group_log.h"
#include "metadata/metadata_image.h"
#include "metadata/metadata_store.h"

#define DEFAULT_OFFSETS_PARTITIONS 50

const char *txn_handler_cstr(struct request_context *ctx, struct kafka_str s)
{
    if (s.len < 0 || !s.data || memchr(s.data, '\0', (size_t)s.len))
        return NULL;
    char *out = kafka_arena_alloc(&ctx->arena, (size_t)s.len + 1);
    if (!out)
        return NULL;
    memcpy(out, s.data, (size_t)s.len);
    out[s.len] = '\0';
    return out;
}

int16_t txn_handler_fenced_error(int16_t code, int16_t api_version, int16_t fenced_from)
{
    return code == KAFKA_ERR_PRODUCER_FENCED && api_version < fenced_from ? KAFKA_ERR_INVALID_PRODUCER_EPOCH : code;
}

int16_t txn_handler_partition_exists(struct request_context *ctx, const char *topic, int32_t partition)
{
    const struct metadata_image *img = metadata_image_acquire(ctx->env->metadata);
    const struct metadata_topic *t = metadata_image_topic_by_name(img, topic, strlen(topic));
    const struct metadata_partition *p = t && partition >= 0 && partition < t->partition_count
                                             ? metadata_topic_partition(t, partition)
                                             : NULL;
    int16_t code = p && p->present ? KAFKA_ERR_NONE : KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    metadata_image_release(img);
    return code;
}

int32_t txn_handler_offsets_partition(struct request_context *ctx, const char *group_id)
{
    const struct metadata_image *img = metadata_image_acquire(ctx->env->metadata);
    const struct metadata_topic *t = metadata_image_topic_by_name(img, GROUP_LOG_TOPIC, strlen(GROUP_LOG_TOPIC));
    int32_t count = t ? t->partition_count : 0;
    metadata_image_release(img);
    if (count <= 0)
        count = ctx->env->config ? config_get_int(ctx->env->config, "offsets.topic.num.partitions")
                                 : DEFAULT_OFFSETS_PARTITIONS;
    return coordinator_partition_for(group_id, strlen(group_id), count);
}
