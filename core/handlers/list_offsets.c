/* ListOffsets: earliest, latest, by timestamp, max timestamp, earliest local
 * and latest tiered. v10's TimeoutMs only bounds remote-storage lookups,
 * which Cairn does not have. */
#include "handlers/handler_util.h"
#include "log/partition_log.h"
#include "metadata/metadata_image.h"
#include "metadata/metadata_store.h"

#define LIST_OFFSETS_LATEST (-1)
#define LIST_OFFSETS_EARLIEST (-2)
#define LIST_OFFSETS_MAX_TIMESTAMP (-3)
#define LIST_OFFSETS_EARLIEST_LOCAL (-4)
#define LIST_OFFSETS_LATEST_TIERED (-5)

/* Kafka answers UNSUPPORTED_VERSION for a negative timestamp it does not
 * know or that the request's version predates. */
static bool list_offsets_timestamp_supported(int64_t timestamp, int16_t version)
{
    switch (timestamp) {
    case LIST_OFFSETS_LATEST:
    case LIST_OFFSETS_EARLIEST:
        return true;
    case LIST_OFFSETS_MAX_TIMESTAMP:
        return version >= 7;
    case LIST_OFFSETS_EARLIEST_LOCAL:
        return version >= 8;
    case LIST_OFFSETS_LATEST_TIERED:
        return version >= 9;
    default:
        return timestamp >= 0;
    }
}

static void lookup_offset(struct partition_log *log, const struct metadata_partition *p, int16_t version,
                          bool read_committed, const struct list_offsets_request_list_offsets_partition *in,
                          struct list_offsets_response_list_offsets_partition_response *out);

static void list_partition(struct request_context *ctx, const struct metadata_topic *topic, bool read_committed,
                           const struct list_offsets_request_list_offsets_partition *in,
                           struct list_offsets_response_list_offsets_partition_response *out)
{
    out->partition_index = in->partition_index;
    out->timestamp = -1;
    out->offset = -1;
    out->leader_epoch = -1;
    if (!list_offsets_timestamp_supported(in->timestamp, ctx->api_version)) {
        out->error_code = KAFKA_ERR_UNSUPPORTED_VERSION;
        return;
    }
    struct partition_log *log;
    out->error_code = handler_leader_log(ctx, topic, in->partition_index, &log);
    if (out->error_code != KAFKA_ERR_NONE)
        return;
    const struct metadata_partition *p = metadata_topic_partition(topic, in->partition_index);
    out->error_code = handler_check_leader_epoch(p, in->current_leader_epoch);
    if (out->error_code == KAFKA_ERR_NONE) {
        lookup_offset(log, p, ctx->api_version, read_committed, in, out);
    }
    partition_log_close(log);
}

static void lookup_offset(struct partition_log *log, const struct metadata_partition *p, int16_t version,
                          bool read_committed, const struct list_offsets_request_list_offsets_partition *in,
                          struct list_offsets_response_list_offsets_partition_response *out)
{
    /* read_committed consumers see nothing at or past the last stable offset. */
    int64_t visible_end = read_committed ? partition_log_last_stable_offset(log) : handler_high_watermark(log);
    /* Not part of responses before v4, and a set value there cannot be encoded. */
    if (version >= 4)
        out->leader_epoch = p->leader_epoch;
    switch (in->timestamp) {
    case LIST_OFFSETS_LATEST:
        out->offset = visible_end;
        break;
    case LIST_OFFSETS_EARLIEST:
    case LIST_OFFSETS_EARLIEST_LOCAL:
        out->offset = partition_log_start_offset(log);
        break;
    case LIST_OFFSETS_MAX_TIMESTAMP:
        if (partition_log_max_timestamp(log, &out->offset, &out->timestamp) != 0) {
            out->offset = -1;
            out->timestamp = -1;
        }
        break;
    case LIST_OFFSETS_LATEST_TIERED:
        /* Nothing is tiered: Kafka answers offset -1 with leader epoch -1. */
        out->offset = -1;
        out->timestamp = -1;
        out->leader_epoch = -1;
        break;
    default:
        if (partition_log_offset_for_timestamp(log, in->timestamp, &out->offset, &out->timestamp) != 0 ||
            out->offset >= visible_end) {
            out->offset = -1;
            out->timestamp = -1;
        }
        break;
    }
}

enum handler_result handle_list_offsets(struct request_context *ctx, void *request, void *response)
{
    struct list_offsets_request *req = request;
    struct list_offsets_response *resp = response;
    const struct metadata_image *img = metadata_image_acquire(ctx->env->metadata);
    if (!img)
        return HANDLER_CLOSE;
    enum handler_result result = HANDLER_RESPOND;
    HANDLER_NEW_ARRAY(ctx, resp->topics, req->topics_count, list_offsets_response_list_offsets_topic_response_init);
    if (!resp->topics) {
        result = HANDLER_CLOSE;
        goto out;
    }
    resp->topics_count = req->topics_count;
    for (int32_t t = 0; t < req->topics_count; t++) {
        struct list_offsets_request_list_offsets_topic *tin = &req->topics[t];
        struct list_offsets_response_list_offsets_topic_response *tout = &resp->topics[t];
        tout->name = tin->name;
        HANDLER_NEW_ARRAY(ctx, tout->partitions, tin->partitions_count,
                          list_offsets_response_list_offsets_partition_response_init);
        if (!tout->partitions) {
            result = HANDLER_CLOSE;
            goto out;
        }
        tout->partitions_count = tin->partitions_count;
        const struct metadata_topic *topic = tin->name.len > 0 ? metadata_image_topic_by_name(img, tin->name.data,
                                                                                              (size_t)tin->name.len)
                                                               : NULL;
        bool allowed = handler_authorize_name(ctx, CAIRN_OP_DESCRIBE, CAIRN_RESOURCE_TOPIC, tin->name, true);
        for (int32_t i = 0; i < tin->partitions_count; i++) {
            list_partition(ctx, allowed ? topic : NULL, req->isolation_level == 1, &tin->partitions[i],
                           &tout->partitions[i]);
            if (!allowed)
                tout->partitions[i].error_code = KAFKA_ERR_TOPIC_AUTHORIZATION_FAILED;
        }
    }
out:
    metadata_image_release(img);
    return result;
}
