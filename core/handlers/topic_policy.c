/* Hands topic changes to the policy plugins: converts the handler's view
 * into the ABI structs (in the request arena) and answers count_topics
 * from the metadata image of the node deciding. */
#include "handlers/topic_policy.h"

#include <string.h>

#include "handlers/handler_util.h"
#include "metadata/metadata_image.h"
#include "protocol/generated/errors.h"

/* count_topics of struct cairn_policy_request: sums over the current image. */
static int count_topics(const struct cairn_policy_request *self, const char *prefix, int64_t *topics,
                        int64_t *partitions)
{
    struct request_context *ctx = self->host_private;
    size_t prefix_len = prefix ? strlen(prefix) : 0;
    int64_t t = 0, p = 0;
    const struct metadata_image *img = metadata_image_acquire(ctx->env->metadata);
    for (int32_t i = 0; img && i < img->topic_count; i++) {
        const struct metadata_topic *topic = img->topics[i];
        if (topic->is_internal || (prefix_len > 0 && strncmp(topic->name, prefix, prefix_len) != 0))
            continue;
        t++;
        p += topic->partition_count;
    }
    if (img)
        metadata_image_release(img);
    if (topics)
        *topics = t;
    if (partitions)
        *partitions = p;
    return CAIRN_OK;
}

int16_t topic_policy_check(struct request_context *ctx, const struct topic_policy_change *c, char *message,
                           size_t message_len)
{
    struct plugin_host *host = ctx->env->plugins;
    if (!host || host->policy_count == 0)
        return KAFKA_ERR_NONE;
    struct cairn_policy_request req = {
        .struct_size = sizeof req,
        .kind = c->kind,
        .topic = c->topic,
        .validate_only = c->validate_only,
        .partitions = c->partitions,
        .current_partitions = c->current_partitions,
        .replication_factor = c->replication_factor,
        .count_topics = count_topics,
        .host_private = ctx,
    };
    size_t na = c->assignment_count > 0 ? (size_t)c->assignment_count : 0;
    size_t nc = c->config_count > 0 ? (size_t)c->config_count : 0;
    if (na > 0) {
        struct cairn_policy_assignment *a = kafka_arena_alloc(&ctx->arena, na * sizeof *a);
        const struct cairn_policy_assignment **pa = kafka_arena_alloc(&ctx->arena, na * sizeof *pa);
        if (!a || !pa)
            return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
        for (size_t i = 0; i < na; i++) {
            a[i] = (struct cairn_policy_assignment){.struct_size = sizeof a[i],
                                                    .partition_index = c->assignments[i].partition_index,
                                                    .broker_ids = c->assignments[i].broker_ids,
                                                    .broker_count = c->assignments[i].broker_count};
            pa[i] = &a[i];
        }
        req.assignments = pa;
        req.assignment_count = na;
    }
    if (nc > 0) {
        struct cairn_policy_config *e = kafka_arena_alloc(&ctx->arena, nc * sizeof *e);
        const struct cairn_policy_config **pe = kafka_arena_alloc(&ctx->arena, nc * sizeof *pe);
        if (!e || !pe)
            return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
        for (size_t i = 0; i < nc; i++) {
            e[i] = (struct cairn_policy_config){
                .struct_size = sizeof e[i], .name = c->configs[i].key, .value = c->configs[i].value};
            pe[i] = &e[i];
        }
        req.configs = pe;
        req.config_count = nc;
    }
    if (plugin_host_policy_check(host, handler_request_info(ctx), &req, message, message_len))
        return KAFKA_ERR_NONE;
    return KAFKA_ERR_POLICY_VIOLATION;
}
