/* DescribeProducers: the active producers of partitions this broker leads,
 * with their epochs, last sequence and timestamp, coordinator epoch and the
 * start of any open transaction. */
#include <stdlib.h>

#include "handlers/handler_util.h"
#include "log/partition_log.h"
#include "log/producer_state.h"
#include "metadata/metadata_image.h"
#include "metadata/metadata_store.h"

static void describe_partition(struct request_context *ctx, const struct metadata_topic *topic, int32_t partition,
                               struct describe_producers_response_partition_response *out)
{
    out->partition_index = partition;
    if (!topic) {
        out->error_code = KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION;
        return;
    }
    struct partition_log *log;
    out->error_code = handler_leader_log(ctx, topic, partition, &log);
    if (out->error_code != KAFKA_ERR_NONE)
        return;
    struct producer_entry *entries;
    size_t count;
    int rc = partition_log_list_producers(log, &entries, &count);
    partition_log_close(log);
    if (rc != 0 || count > INT32_MAX) {
        out->error_code = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
        if (rc == 0)
            free(entries);
        return;
    }
    HANDLER_NEW_ARRAY(ctx, out->active_producers, (int32_t)count, describe_producers_response_producer_state_init);
    if (!out->active_producers) {
        out->error_code = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
        free(entries);
        return;
    }
    out->active_producers_count = (int32_t)count;
    for (size_t i = 0; i < count; i++) {
        const struct producer_entry *e = &entries[i];
        struct describe_producers_response_producer_state *ps = &out->active_producers[i];
        ps->producer_id = e->producer_id;
        ps->producer_epoch = e->epoch;
        ps->last_sequence = e->batch_count > 0 ? e->batches[e->batch_count - 1].last_seq : -1;
        ps->last_timestamp = e->last_timestamp;
        ps->coordinator_epoch = e->coordinator_epoch;
        ps->current_txn_start_offset = e->current_txn_first_offset;
    }
    free(entries);
}

enum handler_result handle_describe_producers(struct request_context *ctx, void *request, void *response)
{
    struct describe_producers_request *req = request;
    struct describe_producers_response *resp = response;
    const struct metadata_image *img = metadata_image_acquire(ctx->env->metadata);
    if (!img)
        return HANDLER_CLOSE;
    enum handler_result result = HANDLER_RESPOND;
    HANDLER_NEW_ARRAY(ctx, resp->topics, req->topics_count, describe_producers_response_topic_response_init);
    if (!resp->topics) {
        result = HANDLER_CLOSE;
        goto out;
    }
    resp->topics_count = req->topics_count;
    for (int32_t t = 0; t < req->topics_count; t++) {
        const struct describe_producers_request_topic_request *tin = &req->topics[t];
        struct describe_producers_response_topic_response *tout = &resp->topics[t];
        tout->name = tin->name;
        HANDLER_NEW_ARRAY(ctx, tout->partitions, tin->partition_indexes_count,
                          describe_producers_response_partition_response_init);
        if (!tout->partitions) {
            result = HANDLER_CLOSE;
            goto out;
        }
        tout->partitions_count = tin->partition_indexes_count;
        const struct metadata_topic *topic = tin->name.len > 0 ? metadata_image_topic_by_name(img, tin->name.data,
                                                                                              (size_t)tin->name.len)
                                                               : NULL;
        bool readable = handler_authorize_name(ctx, CAIRN_OP_READ, CAIRN_RESOURCE_TOPIC, tin->name, true);
        for (int32_t p = 0; p < tin->partition_indexes_count; p++) {
            if (!readable) {
                tout->partitions[p].partition_index = tin->partition_indexes[p];
                tout->partitions[p].error_code = KAFKA_ERR_TOPIC_AUTHORIZATION_FAILED;
                continue;
            }
            describe_partition(ctx, topic, tin->partition_indexes[p], &tout->partitions[p]);
        }
    }
out:
    metadata_image_release(img);
    return result;
}
