/* OffsetFetch: committed offsets of one group (v0-7) or several (v8+), for
 * the listed partitions or, with a null topic list, every partition the
 * group has committed. v9's member id and epoch are only checked for
 * KIP-848 consumer groups; Kafka ignores them for classic groups, the only
 * kind Cairn has, so any member (or none, epoch -1) may read. */
#include <stdlib.h>

#include "group/group_coordinator.h"
#include "handlers/group_handlers.h"

/* One topic's answer, in the shape shared by both response layouts. */
struct fetched_topic {
    struct kafka_str name;
    struct group_offset_fetch *parts;
    size_t count;
};

/* Committed metadata is a Kafka string: NUL bytes are data, so it is
 * copied and answered by length. */
static char *arena_metadata(struct request_context *ctx, const char *m, size_t len)
{
    if (!m)
        return NULL;
    char *out = kafka_arena_alloc(&ctx->arena, len + 1);
    if (!out)
        return NULL;
    memcpy(out, m, len);
    out[len] = '\0';
    return out;
}

static struct kafka_str metadata_str(const struct group_offset_fetch *f)
{
    if (!f->metadata)
        return (struct kafka_str){"", 0};
    return (struct kafka_str){f->metadata, (int32_t)f->metadata_len};
}

/* Groups the entries by topic name (entries of one topic need not be
 * adjacent in the coordinator's answer). Returns the number of topics. */
static size_t group_by_topic(struct request_context *ctx, struct group_offset_fetch *all, size_t n,
                             struct fetched_topic **out)
{
    struct fetched_topic *topics = kafka_arena_alloc(&ctx->arena, (n + 1) * sizeof *topics);
    struct group_offset_fetch *sorted = kafka_arena_alloc(&ctx->arena, (n + 1) * sizeof *sorted);
    bool *used = kafka_arena_alloc(&ctx->arena, n + 1);
    *out = topics;
    if (!topics || !sorted || !used)
        return 0;
    memset(used, 0, n + 1);
    size_t nt = 0, k = 0;
    for (size_t i = 0; i < n; i++) {
        if (used[i])
            continue;
        topics[nt] = (struct fetched_topic){.name = kafka_arena_strdup(&ctx->arena, all[i].topic), .parts = &sorted[k]};
        for (size_t j = i; j < n; j++) {
            if (used[j] || strcmp(all[j].topic, all[i].topic) != 0)
                continue;
            used[j] = true;
            sorted[k++] = all[j];
            topics[nt].count++;
        }
        nt++;
    }
    return nt;
}

/* Keeps only the topics the principal may DESCRIBE; a fetch of every
 * topic hides the others silently, as Kafka does. */
static size_t filter_described_topics(struct request_context *ctx, struct fetched_topic *topics, size_t n)
{
    size_t kept = 0;
    for (size_t t = 0; t < n; t++) {
        if (!handler_authorize_name(ctx, CAIRN_OP_DESCRIBE, CAIRN_RESOURCE_TOPIC, topics[t].name, false))
            continue;
        topics[kept++] = topics[t];
    }
    return kept;
}

/* Looks up one group; fills *topics in the request arena. The returned
 * entries' metadata strings are copied into the arena. */
static int16_t fetch_group(struct request_context *ctx, const char *group_id, bool all_topics,
                           const struct kafka_str *names, int32_t *const *partitions, const int32_t *pcounts,
                           int32_t nt, struct fetched_topic **topics, size_t *topic_count)
{
    /* v7+: offsets of open transactions answer UNSTABLE_OFFSET_COMMIT. */
    const struct offset_fetch_request *req = ctx->request;
    bool require_stable = ctx->api_version >= 7 && req->require_stable;
    *topics = NULL;
    *topic_count = 0;
    /* DESCRIBE on the group first; v0-1 carry the error per partition, so
     * those versions still list the requested partitions. */
    bool group_allowed = handler_authorize_resource(ctx, CAIRN_OP_DESCRIBE, CAIRN_RESOURCE_GROUP, group_id, true);
    if (!group_allowed && (all_topics || ctx->api_version >= 2))
        return KAFKA_ERR_GROUP_AUTHORIZATION_FAILED;
    int16_t err;
    if (all_topics) {
        struct group_offset_fetch *all;
        size_t n;
        err = group_coordinator_fetch_all_offsets_stable(ctx->env->groups, group_id, require_stable, &all, &n);
        struct group_offset_fetch *copy = kafka_arena_alloc(&ctx->arena, (n + 1) * sizeof *copy);
        if (copy) {
            for (size_t i = 0; i < n; i++) {
                copy[i] = all[i];
                copy[i].topic = kafka_arena_strdup(&ctx->arena, all[i].topic ? all[i].topic : "").data;
                copy[i].metadata = arena_metadata(ctx, all[i].metadata, all[i].metadata_len);
            }
            *topic_count = group_by_topic(ctx, copy, n, topics);
            *topic_count = filter_described_topics(ctx, *topics, *topic_count);
        }
        group_offset_fetch_free(all, n);
        return err;
    }
    size_t total = 0;
    for (int32_t t = 0; t < nt; t++)
        total += pcounts[t] > 0 ? (size_t)pcounts[t] : 0;
    struct group_offset_fetch *f = kafka_arena_alloc(&ctx->arena, (total + 1) * sizeof *f);
    struct fetched_topic *out = kafka_arena_alloc(&ctx->arena, (size_t)(nt + 1) * sizeof *out);
    if (!f || !out)
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    size_t k = 0;
    for (int32_t t = 0; t < nt; t++) {
        const char *topic = group_handler_cstr_or_empty(ctx, names[t]);
        out[t] = (struct fetched_topic){
            .name = names[t], .parts = &f[k], .count = pcounts[t] > 0 ? (size_t)pcounts[t] : 0};
        for (int32_t p = 0; p < pcounts[t]; p++)
            f[k++] = (struct group_offset_fetch){.topic = topic, .partition = partitions[t][p]};
    }
    *topics = out;
    *topic_count = (size_t)nt;
    if (!group_allowed) {
        for (size_t i = 0; i < total; i++) {
            f[i].offset = -1;
            f[i].leader_epoch = -1;
            f[i].error_code = KAFKA_ERR_GROUP_AUTHORIZATION_FAILED;
        }
        return KAFKA_ERR_GROUP_AUTHORIZATION_FAILED;
    }
    err = group_coordinator_fetch_offsets_stable(ctx->env->groups, group_id, require_stable, f, total);
    for (size_t i = 0; i < total; i++) {
        char *m = f[i].metadata;
        f[i].metadata = arena_metadata(ctx, m, f[i].metadata_len);
        free(m);
    }
    /* A named topic the principal may not DESCRIBE answers per partition. */
    for (int32_t t = 0; t < nt; t++) {
        if (handler_authorize_name(ctx, CAIRN_OP_DESCRIBE, CAIRN_RESOURCE_TOPIC, names[t], true))
            continue;
        for (size_t p = 0; p < out[t].count; p++) {
            struct group_offset_fetch *e = &out[t].parts[p];
            *e = (struct group_offset_fetch){.topic = e->topic,
                                             .partition = e->partition,
                                             .offset = -1,
                                             .leader_epoch = -1,
                                             .error_code = KAFKA_ERR_TOPIC_AUTHORIZATION_FAILED};
        }
    }
    return err;
}

static enum handler_result answer_single(struct request_context *ctx, struct offset_fetch_request *req,
                                         struct offset_fetch_response *resp)
{
    int16_t v = ctx->api_version;
    bool all = v >= 2 && req->topics_count < 0;
    int32_t nt = req->topics_count > 0 ? req->topics_count : 0;
    struct kafka_str *names = kafka_arena_alloc(&ctx->arena, (size_t)(nt + 1) * sizeof *names);
    int32_t **parts = kafka_arena_alloc(&ctx->arena, (size_t)(nt + 1) * sizeof *parts);
    int32_t *counts = kafka_arena_alloc(&ctx->arena, (size_t)(nt + 1) * sizeof *counts);
    if (!names || !parts || !counts)
        return HANDLER_CLOSE;
    for (int32_t t = 0; t < nt; t++) {
        names[t] = req->topics[t].name;
        parts[t] = req->topics[t].partition_indexes;
        counts[t] = req->topics[t].partition_indexes_count > 0 ? req->topics[t].partition_indexes_count : 0;
    }
    struct fetched_topic *topics;
    size_t n;
    int16_t err = fetch_group(ctx, group_handler_cstr_or_empty(ctx, req->group_id), all, names, parts, counts, nt,
                              &topics, &n);
    if (v >= 2)
        resp->error_code = err;
    HANDLER_NEW_ARRAY(ctx, resp->topics, (int32_t)n, offset_fetch_response_offset_fetch_response_topic_init);
    if (!resp->topics)
        return HANDLER_CLOSE;
    resp->topics_count = (int32_t)n;
    for (size_t t = 0; t < n; t++) {
        struct offset_fetch_response_offset_fetch_response_topic *ot = &resp->topics[t];
        ot->name = topics[t].name;
        HANDLER_NEW_ARRAY(ctx, ot->partitions, (int32_t)topics[t].count,
                          offset_fetch_response_offset_fetch_response_partition_init);
        if (!ot->partitions)
            return HANDLER_CLOSE;
        ot->partitions_count = (int32_t)topics[t].count;
        for (size_t p = 0; p < topics[t].count; p++) {
            const struct group_offset_fetch *f = &topics[t].parts[p];
            struct offset_fetch_response_offset_fetch_response_partition *op = &ot->partitions[p];
            op->partition_index = f->partition;
            op->committed_offset = f->offset;
            if (v >= 5)
                op->committed_leader_epoch = f->leader_epoch;
            op->metadata = metadata_str(f);
            op->error_code = err != KAFKA_ERR_NONE ? err : f->error_code;
        }
    }
    return HANDLER_RESPOND;
}

static enum handler_result answer_groups(struct request_context *ctx, struct offset_fetch_request *req,
                                         struct offset_fetch_response *resp)
{
    int32_t ng = req->groups_count > 0 ? req->groups_count : 0;
    HANDLER_NEW_ARRAY(ctx, resp->groups, ng, offset_fetch_response_offset_fetch_response_group_init);
    if (!resp->groups)
        return HANDLER_CLOSE;
    resp->groups_count = ng;
    for (int32_t g = 0; g < ng; g++) {
        struct offset_fetch_request_offset_fetch_request_group *rg = &req->groups[g];
        struct offset_fetch_response_offset_fetch_response_group *og = &resp->groups[g];
        int32_t nt = rg->topics_count > 0 ? rg->topics_count : 0;
        struct kafka_str *names = kafka_arena_alloc(&ctx->arena, (size_t)(nt + 1) * sizeof *names);
        int32_t **parts = kafka_arena_alloc(&ctx->arena, (size_t)(nt + 1) * sizeof *parts);
        int32_t *counts = kafka_arena_alloc(&ctx->arena, (size_t)(nt + 1) * sizeof *counts);
        if (!names || !parts || !counts)
            return HANDLER_CLOSE;
        for (int32_t t = 0; t < nt; t++) {
            names[t] = rg->topics[t].name;
            parts[t] = rg->topics[t].partition_indexes;
            counts[t] = rg->topics[t].partition_indexes_count > 0 ? rg->topics[t].partition_indexes_count : 0;
        }
        struct fetched_topic *topics;
        size_t n;
        og->group_id = rg->group_id;
        og->error_code = fetch_group(ctx, group_handler_cstr_or_empty(ctx, rg->group_id), rg->topics_count < 0, names,
                                     parts, counts, nt, &topics, &n);
        HANDLER_NEW_ARRAY(ctx, og->topics, (int32_t)n, offset_fetch_response_offset_fetch_response_topics_init);
        if (!og->topics)
            return HANDLER_CLOSE;
        og->topics_count = (int32_t)n;
        for (size_t t = 0; t < n; t++) {
            struct offset_fetch_response_offset_fetch_response_topics *ot = &og->topics[t];
            ot->name = topics[t].name;
            HANDLER_NEW_ARRAY(ctx, ot->partitions, (int32_t)topics[t].count,
                              offset_fetch_response_offset_fetch_response_partitions_init);
            if (!ot->partitions)
                return HANDLER_CLOSE;
            ot->partitions_count = (int32_t)topics[t].count;
            for (size_t p = 0; p < topics[t].count; p++) {
                const struct group_offset_fetch *f = &topics[t].parts[p];
                ot->partitions[p].partition_index = f->partition;
                ot->partitions[p].committed_offset = f->offset;
                ot->partitions[p].committed_leader_epoch = f->leader_epoch;
                ot->partitions[p].metadata = metadata_str(f);
                ot->partitions[p].error_code = f->error_code;
            }
        }
    }
    return HANDLER_RESPOND;
}

enum handler_result handle_offset_fetch(struct request_context *ctx, void *request, void *response)
{
    if (ctx->api_version >= 8)
        return answer_groups(ctx, request, response);
    return answer_single(ctx, request, response);
}
