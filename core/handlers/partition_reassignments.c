/* AlterPartitionReassignments (API 45) and ListPartitionReassignments
 * (API 46), KIP-455. Alter is a controller operation like ElectLeaders
 * (a pure broker forwards it; a node that is not the active controller
 * answers NOT_CONTROLLER); List answers from this node's metadata image.
 * Alter needs ALTER on the cluster, List DESCRIBE on the cluster. */
#include <stdlib.h>
#include <string.h>

#include "handlers/handler_util.h"
#include "metadata/metadata_image.h"
#include "metadata/metadata_reassign.h"
#include "metadata/metadata_store.h"
#include "net/server.h"
#include "util/logger.h"

typedef struct alter_partition_reassignments_response_reassignable_topic_response alter_topic;
typedef struct alter_partition_reassignments_response_reassignable_partition_response alter_partition;
typedef struct list_partition_reassignments_response_ongoing_topic_reassignment list_topic;
typedef struct list_partition_reassignments_response_ongoing_partition_reassignment list_partition;

static struct kafka_str message(struct request_context *ctx, const char *msg)
{
    if (!msg || !*msg)
        return (struct kafka_str){NULL, -1};
    return kafka_arena_strdup(&ctx->arena, msg);
}

/* Every partition of the request answers code (a request-level error). */
static bool answer_all(struct request_context *ctx, const struct alter_partition_reassignments_request *req,
                       struct alter_partition_reassignments_response *resp, int16_t code)
{
    int32_t n = req->topics_count > 0 ? req->topics_count : 0;
    HANDLER_NEW_ARRAY(ctx, resp->responses, n, alter_partition_reassignments_response_reassignable_topic_response_init);
    if (!resp->responses)
        return false;
    resp->responses_count = n;
    for (int32_t i = 0; i < n; i++) {
        const struct alter_partition_reassignments_request_reassignable_topic *in = &req->topics[i];
        alter_topic *tr = &resp->responses[i];
        int32_t pn = in->partitions_count > 0 ? in->partitions_count : 0;
        tr->name = in->name;
        HANDLER_NEW_ARRAY(ctx, tr->partitions, pn,
                          alter_partition_reassignments_response_reassignable_partition_response_init);
        if (!tr->partitions)
            return false;
        tr->partitions_count = pn;
        for (int32_t j = 0; j < pn; j++) {
            tr->partitions[j].partition_index = in->partitions[j].partition_index;
            tr->partitions[j].error_code = code;
        }
    }
    return true;
}

enum handler_result handle_alter_partition_reassignments(struct request_context *ctx, void *request, void *response)
{
    struct alter_partition_reassignments_request *req = request;
    struct alter_partition_reassignments_response *resp = response;
    resp->allow_replication_factor_change = req->allow_replication_factor_change;
    if (!handler_authorize_one(ctx, CAIRN_OP_ALTER, CAIRN_RESOURCE_CLUSTER, HANDLER_CLUSTER_RESOURCE)) {
        resp->error_code = KAFKA_ERR_CLUSTER_AUTHORIZATION_FAILED;
        return answer_all(ctx, req, resp, KAFKA_ERR_CLUSTER_AUTHORIZATION_FAILED) ? HANDLER_RESPOND : HANDLER_CLOSE;
    }
    int32_t n = 0;
    for (int32_t i = 0; i < req->topics_count; i++)
        n += req->topics[i].partitions_count > 0 ? req->topics[i].partitions_count : 0;
    struct metadata_reassignment *items = kafka_arena_alloc(&ctx->arena, (size_t)(n + 1) * sizeof(*items));
    if (!items || !answer_all(ctx, req, resp, KAFKA_ERR_NONE))
        return HANDLER_CLOSE;
    int32_t k = 0;
    for (int32_t i = 0; i < req->topics_count; i++) {
        const struct alter_partition_reassignments_request_reassignable_topic *in = &req->topics[i];
        for (int32_t j = 0; j < in->partitions_count; j++) {
            const struct alter_partition_reassignments_request_reassignable_partition *pp = &in->partitions[j];
            items[k++] = (struct metadata_reassignment){
                .topic = in->name.data,
                .topic_len = in->name.len > 0 ? (size_t)in->name.len : 0,
                .partition_index = pp->partition_index,
                /* A null list cancels; an empty one is refused. */
                .replicas = pp->replicas_count < 0 ? NULL : (pp->replicas ? pp->replicas : (const int32_t *)items),
                .replica_count = pp->replicas_count < 0 ? 0 : pp->replicas_count,
                .keep_replication_factor = !req->allow_replication_factor_change, /* v1, KIP-860 */
            };
        }
    }
    char err[256] = "";
    int16_t rc = metadata_alter_reassignments(ctx->env->metadata, items, n, err, sizeof err);
    if (rc != KAFKA_ERR_NONE) {
        if (rc != KAFKA_ERR_NOT_CONTROLLER)
            logger_info("admin", "AlterPartitionReassignments for %s: %s (error %d)", ctx->net->peer, err, (int)rc);
        resp->error_code = rc;
        resp->error_message = message(ctx, err);
        return answer_all(ctx, req, resp, rc) ? HANDLER_RESPOND : HANDLER_CLOSE;
    }
    k = 0;
    for (int32_t i = 0; i < resp->responses_count; i++) {
        alter_topic *tr = &resp->responses[i];
        for (int32_t j = 0; j < tr->partitions_count; j++, k++) {
            tr->partitions[j].error_code = items[k].error_code;
            tr->partitions[j].error_message = message(ctx, items[k].error_message);
        }
    }
    return HANDLER_RESPOND;
}

static bool named(const struct list_partition_reassignments_request *req, const char *topic, int32_t partition)
{
    if (req->topics_count < 0)
        return true; /* null: every partition */
    for (int32_t i = 0; i < req->topics_count; i++) {
        const struct list_partition_reassignments_request_list_partition_reassignments_topics *t = &req->topics[i];
        if (t->name.len != (int32_t)strlen(topic) || memcmp(t->name.data, topic, strlen(topic)) != 0)
            continue;
        for (int32_t j = 0; j < t->partition_indexes_count; j++)
            if (t->partition_indexes[j] == partition)
                return true;
    }
    return false;
}

static int32_t *arena_ids(struct request_context *ctx, const int32_t *ids, int32_t n)
{
    int32_t *out = kafka_arena_alloc(&ctx->arena, (size_t)(n + 1) * sizeof(*out));
    if (out && n > 0)
        memcpy(out, ids, (size_t)n * sizeof(*out));
    return out;
}

/* Appends p to the answer, opening a topic entry when t is new. */
static bool list_one(struct request_context *ctx, struct list_partition_reassignments_response *resp,
                     const struct metadata_topic *t, const struct metadata_partition *p, int32_t cap)
{
    list_topic *tr = resp->topics_count > 0 ? &resp->topics[resp->topics_count - 1] : NULL;
    if (!tr || tr->name.len != (int32_t)strlen(t->name) || memcmp(tr->name.data, t->name, strlen(t->name)) != 0) {
        tr = &resp->topics[resp->topics_count++];
        list_partition_reassignments_response_ongoing_topic_reassignment_init(tr);
        tr->name = kafka_arena_strdup(&ctx->arena, t->name);
        HANDLER_NEW_ARRAY(ctx, tr->partitions, cap,
                          list_partition_reassignments_response_ongoing_partition_reassignment_init);
        if (!tr->name.data || !tr->partitions)
            return false;
    }
    list_partition *pr = &tr->partitions[tr->partitions_count++];
    pr->partition_index = p->partition_index;
    pr->replicas = arena_ids(ctx, p->replicas, p->replica_count);
    pr->replicas_count = p->replica_count;
    pr->adding_replicas = arena_ids(ctx, p->adding, p->adding_count);
    pr->adding_replicas_count = p->adding_count;
    pr->removing_replicas = arena_ids(ctx, p->removing, p->removing_count);
    pr->removing_replicas_count = p->removing_count;
    return pr->replicas && pr->adding_replicas && pr->removing_replicas;
}

enum handler_result handle_list_partition_reassignments(struct request_context *ctx, void *request, void *response)
{
    struct list_partition_reassignments_request *req = request;
    struct list_partition_reassignments_response *resp = response;
    if (!handler_authorize_one(ctx, CAIRN_OP_DESCRIBE, CAIRN_RESOURCE_CLUSTER, HANDLER_CLUSTER_RESOURCE)) {
        resp->error_code = KAFKA_ERR_CLUSTER_AUTHORIZATION_FAILED;
        return HANDLER_RESPOND;
    }
    const struct metadata_image *img = metadata_image_acquire(ctx->env->metadata);
    bool ok = true;
    HANDLER_NEW_ARRAY(ctx, resp->topics, img->topic_count,
                      list_partition_reassignments_response_ongoing_topic_reassignment_init);
    ok = resp->topics != NULL;
    for (int32_t ti = 0; ok && ti < img->topic_count; ti++) {
        const struct metadata_topic *t = img->topics[ti];
        for (int32_t pi = 0; ok && pi < t->partition_count; pi++) {
            const struct metadata_partition *p = &t->partitions[pi];
            if (p->present && metadata_reassignment_in_progress(p) && named(req, t->name, pi))
                ok = list_one(ctx, resp, t, p, t->partition_count);
        }
    }
    metadata_image_release(img);
    return ok ? HANDLER_RESPOND : HANDLER_CLOSE;
}
