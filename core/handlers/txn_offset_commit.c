/* TxnOffsetCommit (v0-3): a transactional producer's consumed offsets for a
 * group. Topics are checked against the metadata image here; the group
 * coordinator checks the member (v3+), writes the offsets to the group's
 * __consumer_offsets partition as a transactional batch and keeps them
 * pending until the transaction's marker completes them. */
#include <stdlib.h>

#include "group/group_coordinator.h"
#include "handlers/group_handlers.h"
#include "metadata/metadata_image.h"
#include "metadata/metadata_store.h"

static bool txn_partition_exists(const struct metadata_image *img, struct kafka_str topic, int32_t partition)
{
    if (!topic.data || topic.len <= 0)
        return false;
    const struct metadata_topic *t = metadata_image_topic_by_name(img, topic.data, (size_t)topic.len);
    return t && partition >= 0 && partition < t->partition_count && t->partitions[partition].present;
}

enum handler_result handle_txn_offset_commit(struct request_context *ctx, void *request, void *response)
{
    struct txn_offset_commit_request *req = request;
    struct txn_offset_commit_response *resp = response;
    int16_t v = ctx->api_version;
    int32_t nt = req->topics_count > 0 ? req->topics_count : 0;
    size_t total = 0;
    for (int32_t t = 0; t < nt; t++)
        total += req->topics[t].partitions_count > 0 ? (size_t)req->topics[t].partitions_count : 0;
    struct group_offset_commit *c = kafka_arena_alloc(&ctx->arena, (total + 1) * sizeof *c);
    HANDLER_NEW_ARRAY(ctx, resp->topics, nt, txn_offset_commit_response_txn_offset_commit_response_topic_init);
    if (!c || !resp->topics)
        return HANDLER_CLOSE;
    resp->topics_count = nt;
    /* Kafka's order: WRITE on the transactional id and READ on the group
     * fail every partition; then READ on each topic. */
    int16_t request_denied = !handler_authorize_name(ctx, CAIRN_OP_WRITE, CAIRN_RESOURCE_TRANSACTIONAL_ID,
                                                     req->transactional_id, true)
                                 ? KAFKA_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED
                             : !handler_authorize_name(ctx, CAIRN_OP_READ, CAIRN_RESOURCE_GROUP, req->group_id, true)
                                 ? KAFKA_ERR_GROUP_AUTHORIZATION_FAILED
                                 : KAFKA_ERR_NONE;

    const struct metadata_image *img = metadata_image_acquire(ctx->env->metadata);
    size_t k = 0;
    for (int32_t t = 0; t < nt; t++) {
        const struct txn_offset_commit_request_txn_offset_commit_request_topic *rt = &req->topics[t];
        const char *topic = group_handler_cstr_or_empty(ctx, rt->name);
        int16_t denied = request_denied != KAFKA_ERR_NONE ? request_denied
                         : !handler_authorize_name(ctx, CAIRN_OP_READ, CAIRN_RESOURCE_TOPIC, rt->name, true)
                             ? KAFKA_ERR_TOPIC_AUTHORIZATION_FAILED
                             : KAFKA_ERR_NONE;
        for (int32_t p = 0; p < rt->partitions_count; p++) {
            const struct txn_offset_commit_request_txn_offset_commit_request_partition *rp = &rt->partitions[p];
            c[k++] = (struct group_offset_commit){
                .topic = topic,
                .partition = rp->partition_index,
                .offset = rp->committed_offset,
                .leader_epoch = v >= 2 ? rp->committed_leader_epoch : -1,
                .metadata = group_handler_cstr(ctx, rp->committed_metadata),
                .metadata_len = rp->committed_metadata.len > 0 ? (size_t)rp->committed_metadata.len : 0,
                .error_code = denied != KAFKA_ERR_NONE ? denied
                              : txn_partition_exists(img, rt->name, rp->partition_index)
                                  ? KAFKA_ERR_NONE
                                  : KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION,
            };
        }
    }
    metadata_image_release(img);

    struct group_txn_commit_params params = {
        .group_id = group_handler_cstr_or_empty(ctx, req->group_id),
        .producer_id = req->producer_id,
        .producer_epoch = req->producer_epoch,
        .generation_id = v >= 3 ? req->generation_id : -1,
        .member_id = v >= 3 ? group_handler_cstr_or_empty(ctx, req->member_id) : "",
        .group_instance_id = v >= 3 ? group_handler_cstr(ctx, req->group_instance_id) : NULL,
    };
    if (request_denied == KAFKA_ERR_NONE)
        group_coordinator_txn_commit(ctx->env->groups, &params, c, total);

    k = 0;
    for (int32_t t = 0; t < nt; t++) {
        struct txn_offset_commit_response_txn_offset_commit_response_topic *ot = &resp->topics[t];
        int32_t np = req->topics[t].partitions_count > 0 ? req->topics[t].partitions_count : 0;
        ot->name = req->topics[t].name;
        HANDLER_NEW_ARRAY(ctx, ot->partitions, np,
                          txn_offset_commit_response_txn_offset_commit_response_partition_init);
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
