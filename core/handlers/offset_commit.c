/* OffsetCommit and OffsetDelete: check topics against the metadata image,
 * then hand the partitions to the group coordinator. v9 (KIP-848) is the
 * same request; a classic group checks it as v8 does, and only a member
 * commit to a group that does not exist answers differently
 * (GROUP_ID_NOT_FOUND rather than ILLEGAL_GENERATION), as in Kafka. */
#include <stdlib.h>

#include "group/group_coordinator.h"
#include "handlers/group_handlers.h"
#include "metadata/metadata_image.h"
#include "metadata/metadata_store.h"

static bool partition_exists(const struct metadata_image *img, struct kafka_str topic, int32_t partition)
{
    if (!topic.data || topic.len <= 0)
        return false;
    const struct metadata_topic *t = metadata_image_topic_by_name(img, topic.data, (size_t)topic.len);
    return t && partition >= 0 && partition < t->partition_count && t->partitions[partition].present;
}

enum handler_result handle_offset_commit(struct request_context *ctx, void *request, void *response)
{
    struct offset_commit_request *req = request;
    struct offset_commit_response *resp = response;
    int16_t v = ctx->api_version;
    int32_t nt = req->topics_count > 0 ? req->topics_count : 0;
    size_t total = 0;
    for (int32_t t = 0; t < nt; t++)
        total += req->topics[t].partitions_count > 0 ? (size_t)req->topics[t].partitions_count : 0;
    struct group_offset_commit *c = kafka_arena_alloc(&ctx->arena, (total + 1) * sizeof *c);
    HANDLER_NEW_ARRAY(ctx, resp->topics, nt, offset_commit_response_offset_commit_response_topic_init);
    if (!c || !resp->topics)
        return HANDLER_CLOSE;
    resp->topics_count = nt;

    /* Kafka's order: READ on the group fails every partition; then READ
     * on each topic. */
    bool group_allowed = handler_authorize_name(ctx, CAIRN_OP_READ, CAIRN_RESOURCE_GROUP, req->group_id, true);
    const struct metadata_image *img = metadata_image_acquire(ctx->env->metadata);
    size_t k = 0;
    for (int32_t t = 0; t < nt; t++) {
        const struct offset_commit_request_offset_commit_request_topic *rt = &req->topics[t];
        const char *topic = group_handler_cstr_or_empty(ctx, rt->name);
        int16_t denied = !group_allowed ? KAFKA_ERR_GROUP_AUTHORIZATION_FAILED
                         : !handler_authorize_name(ctx, CAIRN_OP_READ, CAIRN_RESOURCE_TOPIC, rt->name, true)
                             ? KAFKA_ERR_TOPIC_AUTHORIZATION_FAILED
                             : KAFKA_ERR_NONE;
        for (int32_t p = 0; p < rt->partitions_count; p++) {
            const struct offset_commit_request_offset_commit_request_partition *rp = &rt->partitions[p];
            c[k++] = (struct group_offset_commit){
                .topic = topic,
                .partition = rp->partition_index,
                .offset = rp->committed_offset,
                .leader_epoch = v >= 6 ? rp->committed_leader_epoch : -1,
                .metadata = group_handler_cstr(ctx, rp->committed_metadata),
                .metadata_len = rp->committed_metadata.len > 0 ? (size_t)rp->committed_metadata.len : 0,
                .error_code = denied != KAFKA_ERR_NONE ? denied
                              : partition_exists(img, rt->name, rp->partition_index)
                                  ? KAFKA_ERR_NONE
                                  : KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION,
            };
        }
    }
    metadata_image_release(img);

    struct group_commit_params params = {
        .group_id = group_handler_cstr_or_empty(ctx, req->group_id),
        .generation_id = v >= 1 ? req->generation_id_or_member_epoch : -1,
        .member_id = v >= 1 ? group_handler_cstr_or_empty(ctx, req->member_id) : "",
        .group_instance_id = v >= 7 ? group_handler_cstr(ctx, req->group_instance_id) : NULL,
        .retention_ms = v >= 2 && v <= 4 ? req->retention_time_ms : -1,
        .unknown_group_not_found = v >= 9,
    };
    if (group_allowed)
        group_coordinator_commit(ctx->env->groups, &params, c, total);

    k = 0;
    for (int32_t t = 0; t < nt; t++) {
        struct offset_commit_response_offset_commit_response_topic *ot = &resp->topics[t];
        int32_t np = req->topics[t].partitions_count > 0 ? req->topics[t].partitions_count : 0;
        ot->name = req->topics[t].name;
        HANDLER_NEW_ARRAY(ctx, ot->partitions, np, offset_commit_response_offset_commit_response_partition_init);
        if (!ot->partitions)
            return HANDLER_CLOSE;
        ot->partitions_count = np;
        for (int32_t p = 0; p < np; p++, k++) {
            ot->partitions[p].partition_index = req->topics[t].partitions[p].partition_index;
            ot->partitions[p].error_code = c[k].error_code;
        }
    }
    return HANDLER_RESPOND;
}

enum handler_result handle_offset_delete(struct request_context *ctx, void *request, void *response)
{
    struct offset_delete_request *req = request;
    struct offset_delete_response *resp = response;
    int32_t nt = req->topics_count > 0 ? req->topics_count : 0;
    size_t total = 0;
    for (int32_t t = 0; t < nt; t++)
        total += req->topics[t].partitions_count > 0 ? (size_t)req->topics[t].partitions_count : 0;
    struct group_offset_delete *d = kafka_arena_alloc(&ctx->arena, (total + 1) * sizeof *d);
    int16_t *pre = kafka_arena_alloc(&ctx->arena, (total + 1) * sizeof *pre);
    HANDLER_NEW_ARRAY(ctx, resp->topics, nt, offset_delete_response_offset_delete_response_topic_init);
    if (!d || !pre || !resp->topics)
        return HANDLER_CLOSE;
    resp->topics_count = nt;
    /* Kafka's order: DELETE on the group, then READ on each topic. */
    if (!handler_authorize_name(ctx, CAIRN_OP_DELETE, CAIRN_RESOURCE_GROUP, req->group_id, true)) {
        resp->error_code = KAFKA_ERR_GROUP_AUTHORIZATION_FAILED;
        resp->topics_count = 0;
        return HANDLER_RESPOND;
    }

    /* Unknown and unauthorised partitions are answered here; the rest go to
     * the coordinator. */
    const struct metadata_image *img = metadata_image_acquire(ctx->env->metadata);
    size_t k = 0, n = 0;
    for (int32_t t = 0; t < nt; t++) {
        const char *topic = group_handler_cstr_or_empty(ctx, req->topics[t].name);
        bool readable = handler_authorize_name(ctx, CAIRN_OP_READ, CAIRN_RESOURCE_TOPIC, req->topics[t].name, true);
        for (int32_t p = 0; p < req->topics[t].partitions_count; p++, k++) {
            int32_t part = req->topics[t].partitions[p].partition_index;
            pre[k] = !readable                                          ? KAFKA_ERR_TOPIC_AUTHORIZATION_FAILED
                     : partition_exists(img, req->topics[t].name, part) ? KAFKA_ERR_NONE
                                                                        : KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION;
            if (pre[k] == KAFKA_ERR_NONE)
                d[n++] = (struct group_offset_delete){.topic = topic, .partition = part};
        }
    }
    metadata_image_release(img);
    resp->error_code = group_coordinator_delete_offsets(ctx->env->groups,
                                                        group_handler_cstr_or_empty(ctx, req->group_id), d, n);
    if (resp->error_code != KAFKA_ERR_NONE) {
        resp->topics_count = 0;
        return HANDLER_RESPOND;
    }
    k = 0;
    n = 0;
    for (int32_t t = 0; t < nt; t++) {
        struct offset_delete_response_offset_delete_response_topic *ot = &resp->topics[t];
        int32_t np = req->topics[t].partitions_count > 0 ? req->topics[t].partitions_count : 0;
        ot->name = req->topics[t].name;
        HANDLER_NEW_ARRAY(ctx, ot->partitions, np, offset_delete_response_offset_delete_response_partition_init);
        if (!ot->partitions)
            return HANDLER_CLOSE;
        ot->partitions_count = np;
        for (int32_t p = 0; p < np; p++, k++) {
            ot->partitions[p].partition_index = req->topics[t].partitions[p].partition_index;
            ot->partitions[p].error_code = pre[k] != KAFKA_ERR_NONE ? pre[k] : d[n++].error_code;
        }
    }
    return HANDLER_RESPOND;
}
