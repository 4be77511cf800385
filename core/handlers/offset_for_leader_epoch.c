/* OffsetForLeaderEpoch: where a leader epoch ends in a partition's log,
 * from its leader epoch cache. Followers ask it where to truncate
 * (KIP-101/279); consumers ask it to check their position after a leader
 * change or when resuming from a committed offset (KIP-320).
 *
 * As Kafka does: CLUSTER_ACTION on the cluster covers every topic, and
 * without it each topic needs DESCRIBE; replica_id changes nothing in the
 * answer (consumers, replica_id -1 or -2, get the log's own end offsets, not
 * bounded by the high watermark, and only the leader answers). */
#include "handlers/handler_util.h"
#include "log/partition_log.h"
#include "metadata/metadata_image.h"
#include "metadata/metadata_store.h"

static void end_offset_for_partition(struct request_context *ctx, const struct metadata_topic *topic,
                                     const struct offset_for_leader_epoch_request_offset_for_leader_partition *in,
                                     struct offset_for_leader_epoch_response_epoch_end_offset *out)
{
    out->partition = in->partition;
    struct partition_log *log;
    out->error_code = handler_leader_log(ctx, topic, in->partition, &log);
    if (out->error_code != KAFKA_ERR_NONE)
        return;
    const struct metadata_partition *p = metadata_topic_partition(topic, in->partition);
    /* current_leader_epoch is -1 (absent) before v2. */
    out->error_code = handler_check_leader_epoch(p, in->current_leader_epoch);
    if (out->error_code == KAFKA_ERR_NONE && partition_log_is_offline(log))
        out->error_code = KAFKA_ERR_KAFKA_STORAGE_ERROR;
    if (out->error_code == KAFKA_ERR_NONE) {
        int32_t found_epoch;
        out->end_offset = partition_log_end_offset_for_epoch(log, in->leader_epoch, &found_epoch);
        /* v0 answers carry no epoch (and a set one cannot be encoded). */
        if (ctx->api_version >= 1)
            out->leader_epoch = found_epoch;
    }
    partition_log_close(log);
}

static bool answer_topic(struct request_context *ctx, const struct metadata_image *img, bool allowed,
                         const struct offset_for_leader_epoch_request_offset_for_leader_topic *tin,
                         struct offset_for_leader_epoch_response_offset_for_leader_topic_result *tout)
{
    tout->topic = tin->topic;
    HANDLER_NEW_ARRAY(ctx, tout->partitions, tin->partitions_count,
                      offset_for_leader_epoch_response_epoch_end_offset_init);
    if (!tout->partitions)
        return false;
    tout->partitions_count = tin->partitions_count > 0 ? tin->partitions_count : 0;
    const struct metadata_topic *topic = allowed && tin->topic.len > 0
                                             ? metadata_image_topic_by_name(img, tin->topic.data,
                                                                            (size_t)tin->topic.len)
                                             : NULL;
    for (int32_t i = 0; i < tout->partitions_count; i++) {
        if (allowed) {
            end_offset_for_partition(ctx, topic, &tin->partitions[i], &tout->partitions[i]);
        } else {
            tout->partitions[i].partition = tin->partitions[i].partition;
            tout->partitions[i].error_code = KAFKA_ERR_TOPIC_AUTHORIZATION_FAILED;
        }
    }
    return true;
}

enum handler_result handle_offset_for_leader_epoch(struct request_context *ctx, void *request, void *response)
{
    struct offset_for_leader_epoch_request *req = request;
    struct offset_for_leader_epoch_response *resp = response;
    int32_t count = req->topics_count > 0 ? req->topics_count : 0;
    /* CLUSTER_ACTION is logged only when allowed: being refused is the
     * normal case for a consumer, which then falls back to DESCRIBE. */
    bool cluster = handler_authorize_logged(ctx, CAIRN_OP_CLUSTER_ACTION, CAIRN_RESOURCE_CLUSTER,
                                            HANDLER_CLUSTER_RESOURCE, true, false);
    bool *allowed = kafka_arena_alloc(&ctx->arena, (size_t)count + 1);
    if (!allowed)
        return HANDLER_CLOSE;
    for (int32_t t = 0; t < count; t++)
        allowed[t] = cluster ||
                     handler_authorize_name(ctx, CAIRN_OP_DESCRIBE, CAIRN_RESOURCE_TOPIC, req->topics[t].topic, true);

    const struct metadata_image *img = metadata_image_acquire(ctx->env->metadata);
    if (!img)
        return HANDLER_CLOSE;
    enum handler_result result = HANDLER_RESPOND;
    HANDLER_NEW_ARRAY(ctx, resp->topics, count, offset_for_leader_epoch_response_offset_for_leader_topic_result_init);
    if (!resp->topics) {
        result = HANDLER_CLOSE;
        goto out;
    }
    resp->topics_count = count;
    /* Kafka lists the authorized topics first, then the refused ones. */
    int32_t at = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int32_t t = 0; t < count; t++) {
            if (allowed[t] != (pass == 0))
                continue;
            if (!answer_topic(ctx, img, allowed[t], &req->topics[t], &resp->topics[at++])) {
                result = HANDLER_CLOSE;
                goto out;
            }
        }
    }
out:
    metadata_image_release(img);
    return result;
}
