/* ListOffsets: earliest, latest, by timestamp, max timestamp, earliest local
 * and latest tiered. A lookup by timestamp searches remote segments first;
 * v10's TimeoutMs bounds the wait for a remote segment (earlier versions:
 * Kafka's remote.list.offsets.request.timeout.ms default, 30 s). */
#include <stdlib.h>
#include <string.h>

#include "handlers/handler_util.h"
#include "tiered/tiered.h"
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

static void lookup_offset(struct request_context *ctx, const char *topic, struct partition_log *log,
                          const struct metadata_partition *p, bool read_committed, int64_t remote_timeout_ms,
                          const struct list_offsets_request_list_offsets_partition *in,
                          struct list_offsets_response_list_offsets_partition_response *out);

static void list_partition(struct request_context *ctx, const struct metadata_topic *topic, bool read_committed,
                           int64_t remote_timeout_ms, const struct list_offsets_request_list_offsets_partition *in,
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
        lookup_offset(ctx, topic->name, log, p, read_committed, remote_timeout_ms, in, out);
    }
    partition_log_close(log);
}

static void lookup_offset(struct request_context *ctx, const char *topic, struct partition_log *log,
                          const struct metadata_partition *p, bool read_committed, int64_t remote_timeout_ms,
                          const struct list_offsets_request_list_offsets_partition *in,
                          struct list_offsets_response_list_offsets_partition_response *out)
{
    int16_t version = ctx->api_version;
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
        out->offset = partition_log_start_offset(log); /* remote segments included */
        break;
    case LIST_OFFSETS_EARLIEST_LOCAL:
        out->offset = partition_log_local_start_offset(log);
        break;
    case LIST_OFFSETS_MAX_TIMESTAMP:
        if (partition_log_max_timestamp(log, &out->offset, &out->timestamp) != 0) {
            out->offset = -1;
            out->timestamp = -1;
        }
        break;
    case LIST_OFFSETS_LATEST_TIERED:
        /* The last offset whose copy is confirmed; -1 (and leader epoch -1,
         * as Kafka answers) when nothing is tiered. */
        out->offset = partition_log_remote_copied_end(log) - 1;
        if (out->offset < 0) {
            out->offset = -1;
            out->leader_epoch = -1;
        }
        out->timestamp = -1;
        break;
    default:
        /* Remote segments first: they hold the older records. */
        out->error_code = tiered_offset_for_timestamp(ctx->env->tiered, log, topic, in->partition_index, in->timestamp,
                                                      remote_timeout_ms, &out->offset, &out->timestamp);
        if (out->error_code != KAFKA_ERR_NONE) {
            out->offset = -1;
            out->timestamp = -1;
            break;
        }
        if (out->offset >= 0)
            break;
        if (partition_log_offset_for_timestamp(log, in->timestamp, &out->offset, &out->timestamp) != 0 ||
            out->offset >= visible_end) {
            out->offset = -1;
            out->timestamp = -1;
        }
        break;
    }
}

/* One named partition of the request, for finding duplicates. */
struct named_partition {
    struct kafka_str name;
    int32_t partition;
    int32_t position; /* across the whole request */
};

static int compare_named(const void *a, const void *b)
{
    const struct named_partition *x = a, *y = b;
    int32_t len = x->name.len < y->name.len ? x->name.len : y->name.len;
    int c = len > 0 ? memcmp(x->name.data, y->name.data, (size_t)len) : 0;
    if (c != 0)
        return c;
    if (x->name.len != y->name.len)
        return x->name.len < y->name.len ? -1 : 1;
    return x->partition < y->partition ? -1 : x->partition > y->partition;
}

/* Kafka answers INVALID_REQUEST for every copy of a partition the request
 * names more than once, and looks none of them up (a lookup by timestamp
 * may open a compressed batch; D copies would open it D times). Sorting
 * keeps this O(n log n) whatever the names. Returns a flag per partition
 * in request order (arena), or NULL when out of memory. */
static bool *duplicate_flags(struct request_context *ctx, const struct list_offsets_request *req)
{
    int32_t total = 0;
    for (int32_t t = 0; t < req->topics_count; t++)
        total += req->topics[t].partitions_count;
    bool *dup = kafka_arena_alloc(&ctx->arena, (size_t)total + 1);
    struct named_partition *all = kafka_arena_alloc(&ctx->arena, ((size_t)total + 1) * sizeof *all);
    if (!dup || !all)
        return NULL;
    memset(dup, 0, (size_t)total + 1);
    int32_t n = 0;
    for (int32_t t = 0; t < req->topics_count; t++)
        for (int32_t i = 0; i < req->topics[t].partitions_count; i++, n++)
            all[n] = (struct named_partition){req->topics[t].name, req->topics[t].partitions[i].partition_index, n};
    qsort(all, (size_t)n, sizeof *all, compare_named);
    for (int32_t i = 1; i < n; i++) {
        if (compare_named(&all[i - 1], &all[i]) == 0) {
            dup[all[i - 1].position] = true;
            dup[all[i].position] = true;
        }
    }
    return dup;
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
    int64_t remote_timeout_ms = ctx->api_version >= 10 && req->timeout_ms > 0 ? req->timeout_ms : 30000;
    const bool *duplicate = duplicate_flags(ctx, req);
    if (!duplicate) {
        result = HANDLER_CLOSE;
        goto out;
    }
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
        for (int32_t i = 0; i < tin->partitions_count; i++, duplicate++) {
            struct list_offsets_response_list_offsets_partition_response *out = &tout->partitions[i];
            if (allowed && *duplicate) {
                out->partition_index = tin->partitions[i].partition_index;
                out->timestamp = -1;
                out->offset = -1;
                out->leader_epoch = -1;
                out->error_code = KAFKA_ERR_INVALID_REQUEST;
                continue;
            }
            list_partition(ctx, allowed ? topic : NULL, req->isolation_level == 1, remote_timeout_ms,
                           &tin->partitions[i], out);
            if (!allowed)
                out->error_code = KAFKA_ERR_TOPIC_AUTHORIZATION_FAILED;
        }
    }
out:
    metadata_image_release(img);
    return result;
}
