/* WriteTxnMarkers: a transaction coordinator (on this or another broker)
 * asks the leader of each partition to end a producer's transaction with a
 * COMMIT or ABORT marker. Same per-partition step as the in-process
 * txn_marker_ops. */
#include "handlers/handler_util.h"
#include "handlers/txn_markers_local.h"
#include "log/partition_log.h"
#include "metadata/metadata_image.h"
#include "metadata/metadata_store.h"

static int16_t write_partition_marker(struct request_context *ctx, const struct metadata_topic *topic,
                                      const struct write_txn_markers_request_writable_txn_marker *m, int32_t partition)
{
    if (!topic)
        return KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    struct partition_log *log;
    int16_t code = handler_leader_log(ctx, topic, partition, &log);
    if (code != KAFKA_ERR_NONE)
        return code;
    const struct metadata_partition *p = metadata_topic_partition(topic, partition);
    struct txn_markers_local local = {
        .logs = ctx->env->logs,
        .fetch_purgatory = ctx->env->fetch_purgatory,
        .groups = ctx->env->groups,
    };
    code = txn_markers_write_partition(&local, log, topic->name, partition, m->producer_id, m->producer_epoch,
                                       m->coordinator_epoch, m->transaction_result, p ? p->leader_epoch : -1);
    partition_log_close(log);
    return code;
}

enum handler_result handle_write_txn_markers(struct request_context *ctx, void *request, void *response)
{
    struct write_txn_markers_request *req = request;
    struct write_txn_markers_response *resp = response;
    /* Only brokers write markers: CLUSTER_ACTION on the cluster. Every
     * partition of the request carries the error. */
    bool allowed = handler_authorize_one(ctx, CAIRN_OP_CLUSTER_ACTION, CAIRN_RESOURCE_CLUSTER,
                                         HANDLER_CLUSTER_RESOURCE);
    const struct metadata_image *img = metadata_image_acquire(ctx->env->metadata);
    if (!img)
        return HANDLER_CLOSE;
    enum handler_result result = HANDLER_RESPOND;
    HANDLER_NEW_ARRAY(ctx, resp->markers, req->markers_count,
                      write_txn_markers_response_writable_txn_marker_result_init);
    if (!resp->markers) {
        result = HANDLER_CLOSE;
        goto out;
    }
    resp->markers_count = req->markers_count;
    for (int32_t i = 0; i < req->markers_count; i++) {
        const struct write_txn_markers_request_writable_txn_marker *m = &req->markers[i];
        struct write_txn_markers_response_writable_txn_marker_result *mout = &resp->markers[i];
        mout->producer_id = m->producer_id;
        HANDLER_NEW_ARRAY(ctx, mout->topics, m->topics_count,
                          write_txn_markers_response_writable_txn_marker_topic_result_init);
        if (!mout->topics) {
            result = HANDLER_CLOSE;
            goto out;
        }
        mout->topics_count = m->topics_count;
        for (int32_t t = 0; t < m->topics_count; t++) {
            const struct write_txn_markers_request_writable_txn_marker_topic *tin = &m->topics[t];
            struct write_txn_markers_response_writable_txn_marker_topic_result *tout = &mout->topics[t];
            tout->name = tin->name;
            HANDLER_NEW_ARRAY(ctx, tout->partitions, tin->partition_indexes_count,
                              write_txn_markers_response_writable_txn_marker_partition_result_init);
            if (!tout->partitions) {
                result = HANDLER_CLOSE;
                goto out;
            }
            tout->partitions_count = tin->partition_indexes_count;
            const struct metadata_topic *topic = tin->name.len > 0 ? metadata_image_topic_by_name(img, tin->name.data,
                                                                                                  (size_t)tin->name.len)
                                                                   : NULL;
            for (int32_t p = 0; p < tin->partition_indexes_count; p++) {
                tout->partitions[p].partition_index = tin->partition_indexes[p];
                tout->partitions[p].error_code = allowed
                                                     ? write_partition_marker(ctx, topic, m, tin->partition_indexes[p])
                                                     : KAFKA_ERR_CLUSTER_AUTHORIZATION_FAILED;
            }
        }
    }
out:
    metadata_image_release(img);
    return result;
}
