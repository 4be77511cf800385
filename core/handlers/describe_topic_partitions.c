/* DescribeTopicPartitions (KIP-966): Metadata's partition view plus the
 * eligible leader replicas, paged by a partition limit and a cursor. Topics
 * are answered in name order from one image, as Kafka's broker does: the
 * requested names (or every topic when none is named) from the cursor's
 * topic on, until the limit is reached; the first partition not sent is the
 * next cursor. */
#include <stdlib.h>
#include <string.h>

#include "handlers/handlers.h"
#include "handlers/handler_util.h"
#include "metadata/metadata_image.h"
#include "metadata/metadata_store.h"

/* Kafka's max.request.partition.size.limit default: the most partitions one
 * answer carries, whatever the request asks for. */
#define DTP_MAX_PARTITION_LIMIT 2000

typedef struct describe_topic_partitions_response_describe_topic_partitions_response_topic dtp_topic;
typedef struct describe_topic_partitions_response_describe_topic_partitions_response_partition dtp_partition;

/* Topic name order: bytewise, a prefix first (Java's compareTo for ASCII). */
static int name_compare(struct kafka_str a, struct kafka_str b)
{
    size_t n = (size_t)(a.len < b.len ? a.len : b.len);
    int c = n ? memcmp(a.data, b.data, n) : 0;
    if (c != 0)
        return c;
    return a.len < b.len ? -1 : a.len > b.len;
}

static int name_compare_qsort(const void *a, const void *b)
{
    return name_compare(*(const struct kafka_str *)a, *(const struct kafka_str *)b);
}

/* Kafka's error answer: every requested topic with the error, nothing else. */
static enum handler_result refuse_request(struct request_context *ctx,
                                          const struct describe_topic_partitions_request *req,
                                          struct describe_topic_partitions_response *resp, int16_t error)
{
    HANDLER_NEW_ARRAY(ctx, resp->topics, req->topics_count,
                      describe_topic_partitions_response_describe_topic_partitions_response_topic_init);
    if (!resp->topics)
        return HANDLER_CLOSE;
    for (int32_t i = 0; i < req->topics_count; i++) {
        resp->topics[i].error_code = error;
        resp->topics[i].name = req->topics[i].name;
    }
    resp->topics_count = req->topics_count > 0 ? req->topics_count : 0;
    return HANDLER_RESPOND;
}

/* The topic operations the principal may perform, as Kafka's bit field
 * (1 << AclOperation code); every supported one without an authorizer. */
static int32_t topic_authorized_operations(struct request_context *ctx, const char *name)
{
    static const int32_t ops[] = {CAIRN_OP_READ,  CAIRN_OP_WRITE,    CAIRN_OP_CREATE,           CAIRN_OP_DELETE,
                                  CAIRN_OP_ALTER, CAIRN_OP_DESCRIBE, CAIRN_OP_DESCRIBE_CONFIGS, CAIRN_OP_ALTER_CONFIGS};
    enum { OP_COUNT = sizeof ops / sizeof ops[0] };
    uint8_t results[OP_COUNT];
    if (handler_decides(ctx)) {
        struct cairn_authz_action actions[OP_COUNT];
        const struct cairn_authz_action *list[OP_COUNT];
        for (int i = 0; i < OP_COUNT; i++) {
            actions[i] = (struct cairn_authz_action){
                .struct_size = sizeof actions[i],
                .operation = ops[i],
                .resource_type = CAIRN_RESOURCE_TOPIC,
                .resource_name = name,
                .pattern_type = CAIRN_PATTERN_LITERAL,
                .resource_reference_count = 1,
            };
            list[i] = &actions[i];
        }
        handler_authorize(ctx, list, OP_COUNT, results);
    } else {
        memset(results, CAIRN_AUTHZ_ALLOWED, sizeof results);
    }
    int32_t bits = 0;
    for (int i = 0; i < OP_COUNT; i++)
        if (results[i] == CAIRN_AUTHZ_ALLOWED)
            bits |= (int32_t)(1u << ops[i]);
    return bits;
}

static int fill_partition(struct request_context *ctx, const struct metadata_image *img,
                          const struct metadata_partition *p, dtp_partition *out)
{
    out->error_code = KAFKA_ERR_NONE;
    out->partition_index = p->partition_index;
    /* Kafka: a leader that is fenced, gone or not on this listener is -1,
     * with no partition error. */
    const struct metadata_broker *leader = metadata_image_broker(img, p->leader);
    bool leader_alive = leader && !leader->fenced && handler_endpoint_for_request(ctx, leader);
    out->leader_id = leader_alive ? p->leader : -1;
    out->leader_epoch = p->leader_epoch;
    /* Copies: the response outlives the image reference. */
    out->replica_nodes = handler_copy_int32s(ctx, p->replicas, p->replica_count);
    out->replica_nodes_count = p->replica_count;
    out->isr_nodes = handler_copy_int32s(ctx, p->isr, p->isr_count);
    out->isr_nodes_count = p->isr_count;
    out->eligible_leader_replicas = handler_copy_int32s(ctx, p->elr, p->elr_count);
    out->eligible_leader_replicas_count = p->elr_count;
    out->last_known_elr = handler_copy_int32s(ctx, p->last_known_elr, p->last_known_elr_count);
    out->last_known_elr_count = p->last_known_elr_count;
    if ((p->replica_count && !out->replica_nodes) || (p->isr_count && !out->isr_nodes) ||
        (p->elr_count && !out->eligible_leader_replicas) || (p->last_known_elr_count && !out->last_known_elr))
        return -1;
    int32_t offline = metadata_partition_offline_replicas(img, p, NULL, 0);
    if (offline > 0) {
        out->offline_replicas = kafka_arena_alloc(&ctx->arena, (size_t)offline * sizeof *out->offline_replicas);
        if (!out->offline_replicas)
            return -1;
        out->offline_replicas_count = metadata_partition_offline_replicas(img, p, out->offline_replicas, offline);
    }
    return 0;
}

/* Partitions [start, start + *remaining) of topic into out; sets *next to
 * the first partition left out, -1 when the topic is complete. */
static int fill_topic(struct request_context *ctx, const struct metadata_image *img, const struct metadata_topic *topic,
                      int32_t start, int32_t *remaining, int32_t *next, dtp_topic *out)
{
    out->error_code = KAFKA_ERR_NONE;
    out->name = kafka_arena_strdup(&ctx->arena, topic->name);
    out->topic_id = topic->topic_id;
    out->is_internal = topic->is_internal;
    if (start < 0)
        start = 0;
    int64_t upper = (int64_t)start + *remaining;
    if (upper > topic->partition_count)
        upper = topic->partition_count;
    *next = upper < topic->partition_count ? (int32_t)upper : -1;
    int32_t span = upper > start ? (int32_t)(upper - start) : 0;
    HANDLER_NEW_ARRAY(ctx, out->partitions, span,
                      describe_topic_partitions_response_describe_topic_partitions_response_partition_init);
    if (!out->partitions)
        return -1;
    int32_t n = 0;
    for (int32_t i = start; i < start + span; i++) {
        const struct metadata_partition *p = &topic->partitions[i];
        if (!p->present)
            continue;
        if (fill_partition(ctx, img, p, &out->partitions[n++]) != 0)
            return -1;
    }
    out->partitions_count = n;
    *remaining -= n;
    return 0;
}

/* The names to answer, sorted and distinct: the requested ones, or every
 * topic's when none is named; only those at or after the cursor's topic. */
static struct kafka_str *candidate_names(struct request_context *ctx,
                                         const struct describe_topic_partitions_request *req,
                                         const struct metadata_image *img, struct kafka_str cursor_topic,
                                         int32_t *count)
{
    bool all_topics = req->topics_count <= 0;
    int32_t cap = all_topics ? img->topic_count : req->topics_count;
    struct kafka_str *names = kafka_arena_alloc(&ctx->arena, (size_t)(cap + 1) * sizeof *names);
    if (!names)
        return NULL;
    int32_t n = 0;
    for (int32_t i = 0; i < cap; i++) {
        struct kafka_str name = all_topics ? kafka_arena_strdup(&ctx->arena, img->topics[i]->name)
                                           : req->topics[i].name;
        if (name.len < 0 || (all_topics && !name.data))
            continue;
        if (name_compare(name, cursor_topic) >= 0)
            names[n++] = name;
    }
    if (!all_topics)
        qsort(names, (size_t)n, sizeof *names, name_compare_qsort);
    int32_t distinct = 0;
    for (int32_t i = 0; i < n; i++)
        if (distinct == 0 || name_compare(names[distinct - 1], names[i]) != 0)
            names[distinct++] = names[i];
    *count = distinct;
    return names;
}

enum handler_result handle_describe_topic_partitions(struct request_context *ctx, void *request, void *response)
{
    struct describe_topic_partitions_request *req = request;
    struct describe_topic_partitions_response *resp = response;
    bool all_topics = req->topics_count <= 0;
    struct kafka_str cursor_topic = req->cursor ? req->cursor->topic_name : kafka_str_from_cstr("");
    if (req->cursor && (req->cursor->partition_index < 0 || cursor_topic.len < 0))
        return refuse_request(ctx, req, resp, KAFKA_ERR_INVALID_REQUEST);
    if (req->cursor && !all_topics) {
        /* The cursor's topic must be one of the named ones. */
        bool named = false;
        for (int32_t i = 0; i < req->topics_count && !named; i++)
            named = req->topics[i].name.len >= 0 && name_compare(req->topics[i].name, cursor_topic) == 0;
        if (!named)
            return refuse_request(ctx, req, resp, KAFKA_ERR_INVALID_REQUEST);
    }

    const struct metadata_image *img = metadata_image_acquire(ctx->env->metadata);
    if (!img)
        return HANDLER_CLOSE;
    enum handler_result result = HANDLER_CLOSE;
    int32_t name_count = 0;
    struct kafka_str *names = candidate_names(ctx, req, img, cursor_topic, &name_count);
    if (!names)
        goto out;
    HANDLER_NEW_ARRAY(ctx, resp->topics, name_count,
                      describe_topic_partitions_response_describe_topic_partitions_response_topic_init);
    /* Denied named topics go after the described ones, as in Kafka. */
    int32_t *denied = kafka_arena_alloc(&ctx->arena, (size_t)(name_count + 1) * sizeof *denied);
    if (!resp->topics || !denied)
        goto out;

    int32_t remaining = req->response_partition_limit;
    if (remaining > DTP_MAX_PARTITION_LIMIT)
        remaining = DTP_MAX_PARTITION_LIMIT;
    if (remaining < 1)
        remaining = 1;
    int32_t n = 0, denied_count = 0;
    for (int32_t i = 0; i < name_count; i++) {
        struct kafka_str name = names[i];
        /* Authorized before the limit is looked at, so a cursor never names
         * a topic the principal may not describe (Kafka filters first).
         * Implicit when listing every topic: a denied one is left out. */
        if (!handler_authorize_name(ctx, CAIRN_OP_DESCRIBE, CAIRN_RESOURCE_TOPIC, name, !all_topics)) {
            if (!all_topics)
                denied[denied_count++] = i;
            continue;
        }
        if (remaining == 0) {
            /* The limit was reached at a topic's end: resume at this one,
             * which Kafka names even when it does not exist. */
            resp->next_cursor = kafka_arena_alloc(&ctx->arena, sizeof *resp->next_cursor);
            if (!resp->next_cursor)
                goto out;
            describe_topic_partitions_response_cursor_init(resp->next_cursor);
            resp->next_cursor->topic_name = name;
            resp->next_cursor->partition_index = 0;
            break;
        }
        const struct metadata_topic *topic = metadata_image_topic_by_name(img, name.data, (size_t)name.len);
        dtp_topic *out = &resp->topics[n];
        if (!topic) {
            if (all_topics)
                continue;
            out->error_code = handler_topic_name_error(name) != KAFKA_ERR_NONE ? KAFKA_ERR_INVALID_TOPIC_EXCEPTION
                                                                               : KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION;
            out->name = name;
            n++;
            continue;
        }
        int32_t start = name_compare(name, cursor_topic) == 0 && req->cursor ? req->cursor->partition_index : 0;
        int32_t next = -1;
        if (fill_topic(ctx, img, topic, start, &remaining, &next, out) != 0)
            goto out;
        n++;
        if (next >= 0) {
            resp->next_cursor = kafka_arena_alloc(&ctx->arena, sizeof *resp->next_cursor);
            if (!resp->next_cursor)
                goto out;
            describe_topic_partitions_response_cursor_init(resp->next_cursor);
            resp->next_cursor->topic_name = out->name;
            resp->next_cursor->partition_index = next;
            break;
        }
    }
    for (int32_t i = 0; i < n; i++) {
        char topic_name[256];
        if (handler_name_cstr(resp->topics[i].name, topic_name, sizeof topic_name))
            resp->topics[i].topic_authorized_operations = topic_authorized_operations(ctx, topic_name);
    }
    for (int32_t i = 0; i < denied_count; i++) {
        dtp_topic *out = &resp->topics[n++];
        out->error_code = KAFKA_ERR_TOPIC_AUTHORIZATION_FAILED;
        out->name = names[denied[i]];
    }
    resp->topics_count = n;
    result = HANDLER_RESPOND;
out:
    metadata_image_release(img);
    return result;
}
