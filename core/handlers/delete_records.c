/* DeleteRecords: moves partitions' log start offsets forward (KIP-107).
 * Segments wholly below a new start go at once, as retention removes
 * them, and the start offsets are checkpointed before the answer, so they
 * survive a crash. A single node has no follower to wait for, so the
 * request's timeout_ms is not used. */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handlers/handler_util.h"
#include "log/log_manager.h"
#include "log/partition_log.h"
#include "metadata/metadata_image.h"
#include "metadata/metadata_store.h"
#include "net/server.h"
#include "util/logger.h"

/* Kafka's DeleteRecordsRequest.HIGH_WATERMARK: delete up to the high watermark. */
#define DELETE_RECORDS_HIGH_WATERMARK (-1)

/* Kafka's order of checks (ReplicaManager.deleteRecordsOnLocalLog, then
 * Partition.deleteRecordsOnLeader): internal topic, leadership, cleanup
 * policy, offset. Returns the error; *low_watermark is the log start
 * offset afterwards (-1 on error). *moved is set when the start moved. */
static int16_t delete_partition(struct request_context *ctx, const struct metadata_topic *topic, int32_t partition,
                                int64_t offset, int64_t *low_watermark, bool *moved)
{
    *low_watermark = -1;
    const struct metadata_partition *p = metadata_topic_partition(topic, partition);
    if (!p || !p->present)
        return KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    if (topic->is_internal)
        return KAFKA_ERR_INVALID_TOPIC_EXCEPTION;
    struct partition_log *log;
    int16_t code = handler_leader_log(ctx, topic, partition, &log);
    if (code != KAFKA_ERR_NONE)
        return code;
    struct log_config cfg;
    partition_log_get_config(log, &cfg);
    int64_t high_watermark = handler_high_watermark(log);
    int64_t target = offset == DELETE_RECORDS_HIGH_WATERMARK ? high_watermark : offset;
    int64_t before = partition_log_start_offset(log);
    if (!cfg.cleanup_delete)
        code = KAFKA_ERR_POLICY_VIOLATION;
    else if (target < 0 || target > high_watermark)
        code = KAFKA_ERR_OFFSET_OUT_OF_RANGE;
    else
        code = partition_log_delete_records_before(log, target);
    if (code == KAFKA_ERR_NONE) {
        *low_watermark = partition_log_start_offset(log);
        *moved = *low_watermark != before;
        if (*moved)
            logger_info("admin", "%s-%" PRId32 ": log start offset %" PRId64 " -> %" PRId64 " (DeleteRecords from %s)",
                        topic->name, partition, before, *low_watermark, ctx->net->peer);
    }
    partition_log_close(log);
    return code;
}

static void audit_delete(struct request_context *ctx, const char *topic, int32_t partition, int64_t offset,
                         const struct delete_records_response_delete_records_partition_result *out)
{
    if (!ctx->env->plugins || ctx->env->plugins->audit_count == 0)
        return;
    json_t *details = json_pack("{s:i, s:I, s:I}", "partition", (int)partition, "offset", (json_int_t)offset,
                                "low_watermark", (json_int_t)out->low_watermark);
    char *text = details ? json_dumps(details, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    handler_audit_admin(ctx, "DeleteRecords", CAIRN_RESOURCE_TOPIC, topic, out->error_code, text);
    free(text);
    json_decref(details);
}

enum handler_result handle_delete_records(struct request_context *ctx, void *request, void *response)
{
    struct delete_records_request *req = request;
    struct delete_records_response *resp = response;
    HANDLER_NEW_ARRAY(ctx, resp->topics, req->topics_count, delete_records_response_delete_records_topic_result_init);
    if (!resp->topics)
        return HANDLER_CLOSE;
    resp->topics_count = req->topics_count > 0 ? req->topics_count : 0;
    const struct metadata_image *img = metadata_image_acquire(ctx->env->metadata);
    if (!img)
        return HANDLER_CLOSE;
    bool any_moved = false;
    enum handler_result result = HANDLER_RESPOND;
    for (int32_t t = 0; t < resp->topics_count; t++) {
        const struct delete_records_request_delete_records_topic *tin = &req->topics[t];
        struct delete_records_response_delete_records_topic_result *tout = &resp->topics[t];
        tout->name = tin->name;
        int32_t n = tin->partitions_count > 0 ? tin->partitions_count : 0;
        HANDLER_NEW_ARRAY(ctx, tout->partitions, n, delete_records_response_delete_records_partition_result_init);
        if (!tout->partitions) {
            result = HANDLER_CLOSE;
            break;
        }
        tout->partitions_count = n;
        char name[256];
        bool name_ok = handler_name_cstr(tin->name, name, sizeof name);
        bool allowed = handler_authorize_name(ctx, CAIRN_OP_DELETE, CAIRN_RESOURCE_TOPIC, tin->name, true);
        const struct metadata_topic *topic = name_ok ? metadata_image_topic_by_name(img, name, strlen(name)) : NULL;
        for (int32_t i = 0; i < n; i++) {
            const struct delete_records_request_delete_records_partition *pin = &tin->partitions[i];
            struct delete_records_response_delete_records_partition_result *pout = &tout->partitions[i];
            pout->partition_index = pin->partition_index;
            pout->low_watermark = -1;
            if (!allowed) {
                pout->error_code = KAFKA_ERR_TOPIC_AUTHORIZATION_FAILED;
                continue;
            }
            if (!topic) {
                pout->error_code = KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION;
                continue;
            }
            bool moved = false;
            pout->error_code = delete_partition(ctx, topic, pin->partition_index, pin->offset, &pout->low_watermark,
                                                &moved);
            any_moved |= moved;
            audit_delete(ctx, topic->name, pin->partition_index, pin->offset, pout);
        }
    }
    metadata_image_release(img);
    /* Before the answer: a client told its records are gone must not see
     * them again after a crash. */
    if (any_moved && log_manager_write_start_offsets(ctx->env->logs) != 0)
        logger_error("admin", "DeleteRecords: could not checkpoint the new log start offsets; the next "
                              "checkpoint interval retries");
    return result;
}
